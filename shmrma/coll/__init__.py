"""Collectives on shared memory: the communicators' barrier slots, the blocking
collectives' area, the nonblocking collectives' channel, and the blocking,
nonblocking, persistent and neighborhood calls.
"""
