"""RE2 syntax -> POSIX ERE as GNU grep reads it, so that grep is given the same language.

grep has no inline flags and no non-capturing groups, so `(?:` becomes `(`, a `(?i)` or `(?i:...)`
region spells each letter both ways (`[aA]`), `\d`/`\w`/`\s` become bracket classes (inside brackets
too), `\x1b` becomes the byte, lazy quantifiers become greedy (same set of matching lines), and
anything else with a backslash-letter is refused rather than passed through untranslated.
`benchmarks/classify_throughput.py` also checks that grep and RE2 agree on which lines match.
"""
import re

CLASS_ESCAPES = {"d": "0-9", "w": "[:alnum:]_", "s": "[:space:]"}
NEGATED = {"D": "[^0-9]", "W": "[^[:alnum:]_]", "S": "[^[:space:]]"}
OUTSIDE = {"d": "[0-9]", "w": "[[:alnum:]_]", "s": "[[:space:]]", **NEGATED}

def _case_fold(ch):
    return f"[{ch.lower()}{ch.upper()}]" if ch.isalpha() else None

def to_ere(pattern: str) -> str:
    """One RE2 pattern as an equivalent ERE (raises ValueError for a construct it cannot translate)."""
    out, i, fold_depth, stack = [], 0, 0, []
    global_fold = False
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("(?i)", i):
            global_fold = True; i += 4; continue
        if pattern.startswith("(?m)", i):
            i += 4; continue
        if pattern.startswith("(?i:", i):
            stack.append(True); fold_depth += 1; out.append("("); i += 4; continue
        if pattern.startswith("(?:", i):
            stack.append(False); out.append("("); i += 3; continue
        if c == "(":
            stack.append(False); out.append("("); i += 1; continue
        if c == ")":
            if stack and stack.pop():
                fold_depth -= 1
            out.append(")"); i += 1
            continue
        if c in "*+?}" and pattern.startswith("?", i + 1):  # lazy -> greedy: same language
            out.append(c); i += 2; continue
        if c == "\\":
            n = pattern[i + 1]
            if n in OUTSIDE:
                out.append(OUTSIDE[n]); i += 2; continue
            if n == "x":
                out.append(chr(int(pattern[i + 2:i + 4], 16))); i += 4; continue
            if n == "b":
                out.append("\\b"); i += 2; continue
            if n.isalpha():
                raise ValueError(f"untranslated escape \\{n} in {pattern!r}")
            fold = (fold_depth or global_fold) and _case_fold(n)
            out.append(fold or ("\\" + n)); i += 2; continue
        if c == "[":
            j, negate = i + 1, False
            if pattern[j] == "^":
                negate, j = True, j + 1
            members, close_first = [], False
            while True:
                ch = pattern[j]
                if ch == "]" and (j > i + 1 + negate or members):
                    break
                if ch == "\\":
                    n = pattern[j + 1]
                    if n in CLASS_ESCAPES:
                        members.append(CLASS_ESCAPES[n])
                    elif n == "x":
                        members.append(chr(int(pattern[j + 2:j + 4], 16))); j += 2
                    elif n == "]":
                        close_first = True
                    elif n == "-":
                        members.append("\x00DASH")
                    elif n == "\\":
                        members.append("\\")
                    else:
                        members.append(n)
                    j += 2; continue
                if ch == "]":
                    close_first = True
                else:
                    if (fold_depth or global_fold) and ch.isalpha():
                        members.append(ch.lower() + ch.upper())
                    else:
                        members.append(ch)
                j += 1
            body = "".join(members)
            dash = "\x00DASH" in body
            body = body.replace("\x00DASH", "")
            out.append("[" + ("^" if negate else "") + ("]" if close_first else "") + body + ("-" if dash else "") + "]")
            i = j + 1; continue
        if c == "{" and re.match(r"\{\d*,?\d*\}", pattern[i:]):
            m = re.match(r"\{\d*,?\d*\}", pattern[i:]); out.append(m.group()); i += len(m.group()); continue
        fold = (fold_depth or global_fold) and _case_fold(c)
        out.append(fold or c); i += 1
    return "".join(out)
