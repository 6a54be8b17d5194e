from .base import *  # noqa: F401,F403
from .base import env_bool

SESSION_COOKIE_SECURE = env_bool("WINNI_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
