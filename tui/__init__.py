"""The terminal debugger: ``dyngraph debug`` (live), ``dyngraph view`` (replay), ``dyngraph demo``.

One Textual app (``app.DebuggerApp``) over one model (``model.Model``: the event history
with a cursor) fed by a source (``sources.ReplaySource`` / ``sources.LiveSource``).
``messages`` is the one place engine events become UI messages; each pane is its own
module. Import what you need from the submodules: importing this package costs nothing.
"""
