"""The slice of GitHub's REST API the CI loop uses: issue comments, pull requests, refs.

The token comes from the environment and is sent only in the Authorization header; no
message this module builds contains it. ``GITHUB_API_URL`` is honoured (GitHub Enterprise
Server, and the local server the tests run). Every failure is a :class:`GitHubError` with the
status and GitHub's own message, so the caller decides what a 403 means (a fork's read-only
token: skip with a notice) and what it does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_toll.core.limits import GITHUB_REQUEST_TIMEOUT
from pytest_toll.core.secrets import cut

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PAGE_SIZE = 100
#: Environment variables a token is read from, first found wins.
TOKEN_VARIABLES = ("TOLL_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN")
#: Who the Actions token writes as; ``GET /user`` refuses that token with this message.
ACTIONS_BOT_LOGIN = "github-actions[bot]"
INTEGRATION_REFUSAL = "Resource not accessible by integration"


class GitHubError(Exception):
    """A request GitHub refused or that never reached it; ``status`` is None for the latter."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def forbidden(self) -> bool:
        """Refused for want of permission: a fork's read-only token, or a setting."""
        return self.status in (401, 403, 404)


def token_from(environ: Mapping[str, str]) -> str | None:
    for name in TOKEN_VARIABLES:
        if environ.get(name):
            return environ[name]
    return None


@dataclass
class GitHub:
    """One repository's endpoints. ``repository`` is ``owner/name``."""

    repository: str
    token: str
    api_url: str = DEFAULT_API_URL
    timeout: float = GITHUB_REQUEST_TIMEOUT

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> GitHub:
        repository = environ.get("GITHUB_REPOSITORY", "")
        if "/" not in repository:
            raise GitHubError("GITHUB_REPOSITORY is not set (owner/name)")
        token = token_from(environ)
        if not token:
            raise GitHubError(f"no token in {', '.join(TOKEN_VARIABLES)}", status=401)
        return cls(repository, token, environ.get("GITHUB_API_URL") or DEFAULT_API_URL)

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        import httpx

        url = self.api_url.rstrip("/") + path
        headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self.token}",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "pytest-toll",
        }
        try:
            response = httpx.request(
                method, url, params=params, json=body, headers=headers, timeout=self.timeout
            )
        except httpx.HTTPError as error:
            # The exception names the URL, never the headers.
            raise GitHubError(f"{method} {path}: {type(error).__name__}: {error}") from None
        if response.status_code >= 400:
            try:
                message = str(response.json().get("message", ""))
            except ValueError:
                message = cut(response.text, 200)
            raise GitHubError(
                f"{method} {path}: {response.status_code} {message}".rstrip(),
                response.status_code,
            )
        return response.json() if response.content else None

    def _pages(self, path: str, params: Mapping[str, str | int]) -> Iterator[Any]:
        page = 1
        while True:
            items = self.request(
                "GET", path, params={**params, "per_page": PAGE_SIZE, "page": page}
            )
            yield from items
            if len(items) < PAGE_SIZE:
                return
            page += 1

    # --- who the token is ----------------------------------------------------------------

    def login(self) -> str:
        """The login the token writes as: ``GET /user``, or the Actions bot for the token
        that endpoint refuses as an integration's. Any other failure is a GitHubError: an
        identity that cannot be told is never guessed."""
        try:
            user = self.request("GET", "/user")
        except GitHubError as error:
            if error.status == 403 and INTEGRATION_REFUSAL in str(error):
                return ACTIONS_BOT_LOGIN
            raise
        login = user.get("login") if isinstance(user, Mapping) else None
        if not isinstance(login, str) or not login:
            raise GitHubError("GET /user: the answer names no login")
        return login

    # --- issue comments (a pull request is an issue) ----------------------------------

    def comments(self, number: int) -> Iterator[Mapping[str, Any]]:
        return self._pages(f"/repos/{self.repository}/issues/{number}/comments", {})

    def create_comment(self, number: int, body: str) -> Mapping[str, Any]:
        path = f"/repos/{self.repository}/issues/{number}/comments"
        created: Mapping[str, Any] = self.request("POST", path, body={"body": body})
        return created

    def update_comment(self, comment_id: int, body: str) -> Mapping[str, Any]:
        path = f"/repos/{self.repository}/issues/comments/{comment_id}"
        updated: Mapping[str, Any] = self.request("PATCH", path, body={"body": body})
        return updated

    # --- pull requests and refs ---------------------------------------------------------

    def open_pulls(self, head_branch: str, base: str) -> list[Mapping[str, Any]]:
        params = {"state": "open", "head": f"{self.owner}:{head_branch}", "base": base}
        return list(self._pages(f"/repos/{self.repository}/pulls", params))

    def create_pull(self, head: str, base: str, title: str, body: str) -> Mapping[str, Any]:
        created: Mapping[str, Any] = self.request(
            "POST",
            f"/repos/{self.repository}/pulls",
            body={"head": head, "base": base, "title": title, "body": body},
        )
        return created

    def update_pull(self, number: int, **fields: str) -> Mapping[str, Any]:
        path = f"/repos/{self.repository}/pulls/{number}"
        updated: Mapping[str, Any] = self.request("PATCH", path, body=fields)
        return updated

    def delete_branch(self, branch: str) -> bool:
        """Delete ``refs/heads/BRANCH``; False when it did not exist."""
        try:
            self.request("DELETE", f"/repos/{self.repository}/git/refs/heads/{branch}")
        except GitHubError as error:
            if error.status in (404, 422):
                return False
            raise
        return True
