"""The fast test tier on every Python that ``requires-python`` promises: ``nox -s unit``.

Each session is a fresh virtualenv with the package and its test extra. A missing
interpreter is an error, not a silent skip.
"""

import nox

nox.options.error_on_missing_interpreters = True


@nox.session(python=["3.10", "3.11", "3.12", "3.13"])
def unit(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run(
        "python",
        "-m",
        "pytest",
        "-m",
        "unit",
        "-n",
        "auto",
        "-q",
        "-p",
        "no:cacheprovider",
        *session.posargs,
    )
