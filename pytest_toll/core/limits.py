"""Defaults that bound a measurement (and the CI loop's calls to GitHub), shared by every job
and adapter: no deadline or read limit is written anywhere else."""

from __future__ import annotations

#: The context window a share is printed against when no model gives one (tokens).
DEFAULT_WINDOW = 1_000_000
#: The deadline of one whole measurement that talks to another process or host (seconds): an
#: MCP server's listing (``toll weigh``, ``toll fix``, ``toll measure``, a ledger entry) and an
#: Anthropic count_tokens exchange. It leaves room for a server started through ``npx`` or
#: ``uvx`` that fetches its package first, and still fails a hung server's CI step in half a
#: minute rather than at the job's own timeout.
DEFAULT_TIMEOUT = 30.0
#: How long one GitHub REST call of the CI loop (``toll github``) may wait to connect, and
#: then for each read or write (seconds, httpx's per-phase timeout, not a whole deadline): not
#: a measurement, but the same half minute, so a GitHub outage fails the step instead of
#: hanging it while a slow GitHub Enterprise Server still answers.
GITHUB_REQUEST_TIMEOUT = 30.0
#: One git question about the checkout (``git ls-files``: is a memory file tracked?), which
#: git answers at once; the deadline stops a git that hangs (a held lock, a network
#: filesystem) from hanging the measurement with it (seconds).
GIT_QUERY_TIMEOUT = 30.0
#: One git command of ``toll trend`` (the ledger's log, an old ledger's text): the log walks
#: the whole history of a repository that may be large, so it is given a minute (seconds).
GIT_HISTORY_TIMEOUT = 60.0
#: The longest deadline a measurement accepts (a day, in seconds): ``.inf`` or ``1e300`` is a
#: usage error, not a measurement that never ends.
MAX_TIMEOUT = 86_400.0
#: How long ``toll versus`` lets each of its two commands run (seconds).
VERSUS_COMMAND_TIMEOUT = 120.0

# Read limits. Every byte toll reads from a file, a process or a host is read against one of
# these, so a hostile or broken source costs bounded memory. Whatever passes a limit is not
# measured: the measurement is "could not judge" with a message saying what was cut, never a
# smaller number.

#: A file toll reads as input: a tools file, ``toll count`` input, a messages or request file,
#: a system prompt, a ``toll diff`` report (bytes).
MAX_INPUT_FILE_BYTES = 32 * 1024 * 1024
#: One MCP message: a stdio server's stdout line, an HTTP answer body, one SSE line (bytes).
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: The tail of a stdio server's stderr kept for error messages (bytes; older output is dropped).
STDERR_TAIL_BYTES = 4 * 1024
#: The body of an Anthropic count_tokens answer (bytes; a real one is under a kilobyte).
MAX_COUNT_RESPONSE_BYTES = 1024 * 1024
#: One file a skill points to, or its SKILL.md (bytes).
MAX_SKILL_FILE_BYTES = 16 * 1024 * 1024
#: How many files one skill may name (transitively) or hold for a placeholder to match; a
#: skill past it is not measured rather than measured short.
MAX_SKILL_FILES = 10_000
#: How deeply JSON or YAML input may nest (arrays and objects), and how many values it may
#: hold once YAML aliases are expanded. Deeper input would overflow Python's stack.
MAX_NESTING_DEPTH = 200
MAX_DOCUMENT_VALUES = 2_000_000
#: A configuration file toll reads to find things (an MCP config, a plugin's or
#: marketplace's manifest, a lock file): hand-written, kilobytes in real repositories (bytes).
MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024
#: How many folders deep a walk of a tree (a rules, commands or transcripts folder) goes
#: below its top: far deeper than any real layout, and a bound on a hostile one.
MAX_WALK_DEPTH = 32
#: The most digits a number in a JSON, YAML or TOML document may have: a count we store fits
#: in far fewer, and converting thousands of digits is slow (CPython caps it at 4,300).
MAX_NUMBER_DIGITS = 64
#: How many nodes YAML aliases may add once expanded, outside the ledger (which has its own):
#: shared anchors in a tools file are fine, an alias bomb (each level repeating the last) is not.
MAX_YAML_ALIAS_NODES = 100_000
#: The largest token count one transcript record may claim (2^40, about 10^12): a real turn
#: is under 10^7; a larger claim is a bad line, never a number stored or summed.
MAX_TOKEN_COUNT = 1 << 40
#: One row value of an SQLite transcript source (bytes): a larger value is a bad record.
MAX_DATABASE_VALUE_BYTES = 16 * 1024 * 1024
#: How long toll reads one SQLite transcript source (seconds): a database of recursive views
#: would otherwise run its statement forever.
DATABASE_TIME_LIMIT = 30.0
#: Findings one file may raise before the rest are counted in one "and N more" finding.
MAX_FINDINGS_PER_FILE = 50
#: Plugins one marketplace may list: far beyond a real one, a bound on a hostile one.
MAX_MARKETPLACE_PLUGINS = 1_000
#: One line of a JSON-lines transcript (bytes): a longer line is counted as unreadable and
#: skipped in bounded chunks, never held whole.
MAX_TRANSCRIPT_LINE_BYTES = 16 * 1024 * 1024

# --- the ledger (toll.yaml) ---------------------------------------------------------------
#: The largest ledger read (bytes). A ledger of 50,000 pinned tests is about 3 MB; anything
#: bigger is not a hand-kept ledger, and reading it must not take minutes or gigabytes.
LEDGER_MAX_BYTES = 8 * 1024 * 1024
#: How deeply mappings and lists may nest. The schema's deepest path is 5 levels
#: (``transcripts.decisions.<shape>.status``); deeper nesting is a mistake or an attack.
LEDGER_MAX_DEPTH = 32
#: How many nodes aliases (``*name``) may add in total, expanded: anchors for shared
#: ``env:``/``headers:`` maps are fine, an alias bomb (each level repeating the last) is not.
LEDGER_MAX_ALIAS_NODES = 10_000
#: How long a ``--toll-update`` waits for another run's lock on the ledger (seconds).
LEDGER_LOCK_TIMEOUT = 60.0
#: How far an estimate may read from the provider's own count before it is called out.
NATIVE_TOLERANCE = 0.05
