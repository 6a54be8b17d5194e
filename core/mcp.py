"""What every app's `mcp.py` uses to declare tools: translate service errors into `isError`
results and keep DB connections from leaking out of the SDK's worker threads."""
import functools
from typing import Any, Callable, TypeVar

from django.db import DataError, close_old_connections
from mcp.server.mcpserver.exceptions import ToolError

from winni_site.errors import ApplicationError, from_database_error

F = TypeVar("F", bound=Callable[..., Any])


def service_tool(fn: F) -> F:
    """Wrap a sync tool handler (the SDK runs it in a worker thread, where Django's request
    cleanup never runs): close stale connections around the call, and turn an ApplicationError
    into a ToolError, which the SDK reports as `isError: true` with our message."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        except ApplicationError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from exc
        except DataError as exc:
            error = from_database_error(exc)
            raise ToolError(f"{error.code}: {error.message}") from exc
        finally:
            close_old_connections()

    return wrapper  # type: ignore[return-value]
