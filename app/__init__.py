"""Bannerfall: an authoritative game server for card games of territory."""
from app import _native

_native.install()
