"""Secrets: where index credentials may come from, and what must never enter a build context.

Credentials never belong in a committed file, so ``credentials`` takes them from the environment
or the user's netrc only; ``context`` keeps the files a project commonly holds by accident
(``.env``, keys, cloud credentials) out of every image and warns about look-alikes.
"""
