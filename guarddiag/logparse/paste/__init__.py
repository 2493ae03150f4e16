"""Pastes: torch's messages found by their text where the line frame is missing or mangled.

What users paste into issues, chats and notebooks went through a terminal, a browser and a
Markdown editor: torch's line prefix is gone or cut short, lines are quoted (``> ``), indented,
put in a table, wrapped at a terminal width, flattened into one line by a web form, HTML-escaped,
or share the line with a progress bar. :class:`PasteReader` undoes that, one line at a time:

1. clean a physical line: split it at ``\\r`` (progress bars), unescape HTML, drop quote markers
   and the ``#`` of a log pasted into a code comment (:mod:`.repair`);
2. re-join lines cut at the terminal width (:mod:`.rejoin`), then drop table borders;
3. split a line that holds several messages at the places a torch message or prefix starts
   (one linear scan, :data:`.split.MARKERS`), a prefix staying with the message after it;
4. strip whatever is left of torch's prefix (:func:`strip_prefix`), keeping a ``[rankN]:``;
5. recognise the message by its text (:mod:`.reader`, with the patterns of :mod:`.messages`) and
   give each of its lines a neutral frame, so that
   :class:`~guarddiag.logparse.parser.LogParser` reads it with its own record readers (recompile
   blocks, the torch 2.1 tuple, limit warnings); what a message does not show (its function's line
   or file) is given as a stand-in and taken off the events again.

Compile ids are dropped on purpose: a paste shows some of torch's messages, not the log, so
counts come from the messages shown (a recompile per ``Recompiling function`` message) and not
from compile numbers. What LogParser has no reader for is turned into events here: the
``CompileProfiler`` table, guard failures shown without their ``Recompiling function`` line (a
single ``- 0/1: ...`` line, ``Guard fail reason:`` of an error), a limit warning's tail without
its first line, and the pre-2.0 ``torchdynamo hit recompilation cache limit`` one-liner.

Whether a line is a framed log line at all, or a log that went through a browser, is
:mod:`.detect`'s to say.
"""

from guarddiag.logparse.paste.detect import framed_part, mangled_line
from guarddiag.logparse.paste.reader import PasteReader
from guarddiag.logparse.paste.rejoin import WINDOW
from guarddiag.logparse.paste.split import split_messages, strip_prefix

__all__ = ["WINDOW", "PasteReader", "framed_part", "mangled_line", "split_messages", "strip_prefix"]
