"""Signals as a terminal gives them to the command a user types."""

from __future__ import annotations

import signal


def like_a_terminal() -> None:
    """``preexec_fn`` of a child that a test stops with SIGINT, as Ctrl-C does.

    A suite started in the background of a non-interactive shell (a script, many CI
    runners) runs with SIGINT ignored; a child inherits ``SIG_IGN`` across ``exec``, and
    Python then installs no ``KeyboardInterrupt`` handler, so a test of Ctrl-C would pass
    from a terminal and hang there. The default disposition is what a terminal gives.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
