"""Admin registrations of the memory app."""
from memory import librarian_admin  # noqa: F401
