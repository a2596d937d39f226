"""The composite action's steps after ``pytest --toll`` (``toll github STEP``): the network and
git work of the CI loop — the GitHub REST client (:mod:`.api`) and the step outputs, sticky
comment, ratchet branch and badge branch (:mod:`.loop`). An adapter, like the CLI that runs
it: it reads finished reports and the repository, and nothing below it imports it."""
