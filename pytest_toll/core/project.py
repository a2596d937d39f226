"""Where pytest-toll lives on the web, read from the installed package's own metadata.

``[project.urls]`` in pyproject.toml is the one place that names the repository and the docs;
an install carries those as ``Project-URL`` entries. Everything that links to the project
(SARIF's ``informationUri`` and ``helpUri``, the badge) asks here and leaves its link out
when the entry is unset, so no address is guessed, and none is written down twice to drift.
"""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "pytest-toll"

# Labels as PEP 753 normalises them (lowercase, punctuation and spaces dropped), with the
# aliases it lists as well known, in the order they are preferred.
_HOME = ("homepage",)
_DOCUMENTATION = ("documentation", "docs")
_SOURCE = ("source", "repository", "sourcecode", "github")


def normalized_label(label: str) -> str:
    """``"Source Code"``, ``"source-code"`` and ``"SOURCE_CODE"`` are one label (PEP 753)."""
    return "".join(character for character in label.lower() if character.isalnum())


def project_urls(distribution: str = DISTRIBUTION) -> dict[str, str]:
    """The installed distribution's ``Project-URL`` entries by normalised label; empty when
    it is not installed (a source tree on ``sys.path``) or names none."""
    try:
        entries = metadata.metadata(distribution).get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return {}
    urls: dict[str, str] = {}
    for entry in entries:
        label, comma, url = str(entry).partition(",")
        if comma and url.strip():
            urls.setdefault(normalized_label(label), url.strip())
    return urls


def _first(labels: tuple[str, ...], urls: dict[str, str]) -> str | None:
    return next((urls[label] for label in labels if label in urls), None)


def documentation_url() -> str | None:
    """The docs' address, or None when ``[project.urls]`` names none."""
    return _first(_DOCUMENTATION, project_urls())


def home_url() -> str | None:
    """Where to read about pytest-toll: its home page, else its docs, else its repository."""
    return _first(_HOME + _DOCUMENTATION + _SOURCE, project_urls())
