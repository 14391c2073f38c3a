"""Splitting a line of words (a ``%mcp`` line, ``$MCP_REPLAY_COMMAND``) the platform's way.

POSIX: sh rules (``shlex``), where a backslash escapes the next character. On Windows a
backslash is the path separator: ``shlex`` would turn ``C:\\Users\\me\\out`` into
``C:Usersmeout``, a path relative to drive C's current folder. There the rules are the C
runtime's (``CommandLineToArgvW``), the inverse of ``subprocess.list2cmdline``, which is
also how IPython splits its own magics' arguments on Windows. Imports nothing of the
package, so every layer may use it.
"""

from __future__ import annotations

import shlex
import sys


def split(line: str, *, windows: bool | None = None, comments: bool = False) -> list[str]:
    """The words of ``line``; ``ValueError`` for an unclosed quote (POSIX rules only).
    ``comments``: a word that starts with an unquoted ``#`` ends the line, as in a shell
    (on Windows, any word that starts with ``#``)."""
    if windows is None:
        windows = sys.platform == "win32"
    if not windows:
        return shlex.split(line, comments=comments)
    words = split_windows(line)
    if comments:
        cut = next((i for i, word in enumerate(words) if word.startswith("#")), len(words))
        words = words[:cut]
    return words


def split_windows(line: str) -> list[str]:
    """Windows rules: spaces and tabs separate words outside double quotes; a backslash is
    itself unless backslashes precede a ``"``: 2n of them give n and the quote opens or
    closes, 2n+1 give n and a literal ``"``. Single quotes are plain characters."""
    words: list[str] = []
    word: list[str] = []
    in_word = quoted = False
    backslashes = 0
    for char in line:
        if char == "\\":
            backslashes += 1
            continue
        if char == '"':
            word.append("\\" * (backslashes // 2))
            if backslashes % 2:
                word.append('"')
            else:
                quoted = not quoted
            backslashes, in_word = 0, True
            continue
        if backslashes:
            word.append("\\" * backslashes)
            backslashes, in_word = 0, True
        if char in " \t" and not quoted:
            if in_word:
                words.append("".join(word))
            word, in_word = [], False
        else:
            word.append(char)
            in_word = True
    word.append("\\" * backslashes)
    if in_word or backslashes:
        words.append("".join(word))
    return words
