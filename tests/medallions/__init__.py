"""Tests of medallions/: the store, its interfaces, the providers, checkpoint jobs, winni_client."""
