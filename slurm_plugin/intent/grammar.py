"""The intent language: a tokenizer and a recursive-descent parser, one function per rule below.

A hand-written parser, not a grammar library (lark): the language is a dozen rules, the parser has no
dependency and imports in microseconds (the admission daemon parses a batch script's ``#HETSCHED intent`` line
on slurmctld's submit path), and every error names the column and what was expected there.

Grammar (EBNF; words are case-insensitive; clauses in any order, separated by commas or spaces)::

    intent   = clause { [","] clause } END
    clause   = task | on | accel | finish | start | window | budget | goal | duration
    task     = VERB [ NUMBER ITEMS ]                     train | render 500 frames | simulate | infer | build
    on       = "on" amount                               on 4 GPUs | on 2 nodes | on 16 cores
    amount   = NUMBER ( "gpu"["s"] | "npu"["s"] | "node"["s"] | "core"["s"] | "cpu"["s"] )
    accel    = "any" "type" | TYPE { "or" TYPE }         any type | a100 or h100
    finish   = ( "finish" | "done" ) "by" when | "by" when | "before" when
    start    = ( "start" | "after" | "from" ) when       start after Friday 18:00 = after Friday 18:00
    window   = "this" ( "weekend" | "week" ) | "tonight" | "overnight"
    budget   = ( "under" | "below" | "within" | "max" | "budget" ) money
    money    = NUMBER CURRENCY | CURRENCY NUMBER         200 EUR | 200 € | $50
    goal     = "cheapest" | "fastest"
    duration = "for" NUMBER UNIT [ "each" | "per" ITEM ] | [ "at" ] NUMBER UNIT ( "each" | "per" ITEM )
    when     = [ "next" ] DAY [ TIME ] | ( "today" | "tomorrow" | "tonight" ) [ TIME ] | DATE [ TIME ] | TIME
    UNIT     = s | sec | min | minute(s) | h | hour(s) | d | day(s)    TIME = HH:MM    DATE = YYYY-MM-DD

``TYPE`` is any other word that is not a keyword (an accelerator type, checked against the site later).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import PicklableError

MAX_INTENT = 512  # characters


class IntentSyntaxError(PicklableError, ValueError):
    """A parse error at ``column`` (1-based) of the intent text."""

    def __init__(self, text: str, column: int, message: str) -> None:
        self.text, self.column, self.message = text, column, message
        super().__init__(f"intent column {column}: {message}\n  {text}\n  {' ' * (column - 1)}^")


_TOKEN = re.compile(r"\s*(?:(?P<date>\d{4}-\d{2}-\d{2})|(?P<time>\d{1,2}:\d{2})|(?P<num>\d+(?:\.\d+)?)"
                    r"|(?P<word>[A-Za-z][A-Za-z0-9_.-]*)|(?P<cur>[€$£])|(?P<comma>,))")

VERBS = ("train", "fine-tune", "finetune", "infer", "serve", "render", "simulate", "build", "test", "run",
         "analyse", "analyze", "transcode", "compile")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DAY_ABBREV = {d[:3]: i for i, d in enumerate(DAYS)} | {d: i for i, d in enumerate(DAYS)}
UNITS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "min": 60, "mins": 60, "minute": 60,
         "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "d": 86400,
         "day": 86400, "days": 86400}
RESOURCES = {"gpu": "gpu", "gpus": "gpu", "npu": "npu", "npus": "npu", "node": "node", "nodes": "node",
             "core": "core", "cores": "core", "cpu": "core", "cpus": "core"}
CURRENCIES = {"eur": "EUR", "euro": "EUR", "euros": "EUR", "€": "EUR", "usd": "USD", "dollars": "USD",
              "$": "USD", "gbp": "GBP", "£": "GBP"}
KEYWORDS = {"on", "any", "type", "or", "finish", "done", "by", "before", "start", "after", "from", "this",
            "weekend", "week", "tonight", "overnight", "under", "below", "within", "max", "budget", "cheapest",
            "fastest", "for", "each", "per", "next", "today", "tomorrow", "and", *VERBS, *DAY_ABBREV, *UNITS,
            "at", *RESOURCES, *CURRENCIES}


@dataclass(frozen=True)
class Token:
    kind: str  # date time num word cur comma end
    text: str
    column: int  # 1-based

    @property
    def low(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class When:
    """A point in time as written: a weekday (0 = Monday) or a relative day or a date, and an optional HH:MM."""

    day: int | None = None  # weekday
    relative: str | None = None  # today | tomorrow | tonight
    date: str | None = None  # YYYY-MM-DD
    time: str | None = None  # HH:MM
    next_week: bool = False
    column: int = 0


@dataclass
class Intent:
    """What the user asked for; every field optional. ``columns`` maps a field to where it was written."""

    verb: str | None = None
    items: int | None = None  # render 500 frames -> 500
    item_word: str | None = None
    amount: int | None = None
    resource: str | None = None  # gpu npu node core
    any_type: bool = False
    types: list[str] = field(default_factory=list)
    finish_by: When | None = None
    start_at: When | None = None
    window: str | None = None  # weekend | week | tonight
    budget: float | None = None
    currency: str | None = None
    goal: str | None = None  # cheapest | fastest
    duration_s: float | None = None
    per_item: bool = False  # the duration is per item (each frame)
    columns: dict[str, int] = field(default_factory=dict)
    text: str = ""


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_INTENT:
        raise IntentSyntaxError(text[:MAX_INTENT], MAX_INTENT, f"longer than {MAX_INTENT} characters")
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise IntentSyntaxError(text, col, f"unexpected character {text[col - 1]!r}")
        kind = m.lastgroup
        out.append(Token(kind, m.group(kind), m.start(kind) + 1))
        pos = m.end()
    out.append(Token("end", "", len(text) + 1))
    return out


class _IntentParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.out = Intent(text=text)

    # -- helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self) -> Token:
        t = self.tok
        self.i += 1
        return t

    def error(self, message: str, tok: Token | None = None):
        tok = tok or self.tok
        found = "the end" if tok.kind == "end" else repr(tok.text)
        raise IntentSyntaxError(self.text, tok.column, f"{message}, found {found}")

    def expect_word(self, *words: str) -> Token:
        if self.tok.kind == "word" and self.tok.low in words:
            return self.take()
        self.error(f"expected {' or '.join(repr(w) for w in words)}")

    def number(self, what: str) -> float:
        if self.tok.kind != "num":
            self.error(f"expected {what} (a number)")
        return float(self.take().text)

    def once(self, name: str, tok: Token) -> None:
        if name in self.out.columns:
            raise IntentSyntaxError(self.text, tok.column,
                                    f"{name} given twice (first at column {self.out.columns[name]})")
        self.out.columns[name] = tok.column

    # -- rules
    def intent(self) -> Intent:
        if self.tok.kind == "end":
            self.error("expected a clause (e.g. 'train on 4 GPUs')")
        self.clause()
        while self.tok.kind != "end":
            if self.tok.kind == "comma":
                self.take()
            self.clause()
        return self.out

    def clause(self) -> None:
        t = self.tok
        w = t.low if t.kind == "word" else ""
        if w in VERBS:
            return self.task()
        if w == "on":
            return self.on()
        if w == "any" or (t.kind == "word" and w not in KEYWORDS):
            return self.accel()
        if w in ("finish", "done", "by", "before"):
            return self.finish()
        if w in ("start", "after", "from"):
            return self.start()
        if w in ("this", "tonight", "overnight"):
            return self.window()
        if w in ("under", "below", "within", "max", "budget"):
            return self.budget()
        if w in ("cheapest", "fastest"):
            self.once("goal", t)
            self.out.goal = self.take().low
            return None
        if w in ("for", "at") or t.kind == "num":
            return self.duration()
        self.error("expected a clause: a verb (train, render, ...), 'on N GPUs', an accelerator type, "
                   "'finish by', 'start', 'this weekend', 'under N EUR', 'cheapest'/'fastest' or 'for N hours'")

    def task(self) -> None:
        t = self.take()
        self.once("task", t)
        self.out.verb = t.low
        if self.tok.kind == "num" and self.peek().kind == "word" and self.peek().low not in KEYWORDS:
            n = self.number("a count")
            if n != int(n) or not 1 <= n <= 1_000_000:
                self.error("the item count must be a whole number 1 .. 1000000", self.toks[self.i - 1])
            self.out.items, self.out.item_word = int(n), self.take().low

    def on(self) -> None:
        t = self.take()
        self.once("resources", t)
        n = self.number("how many (e.g. 'on 4 GPUs')")
        if n != int(n) or not 1 <= n <= 100_000:
            self.error("the count must be a whole number 1 .. 100000", self.toks[self.i - 1])
        if self.tok.kind != "word" or self.tok.low not in RESOURCES:
            self.error("expected GPUs, NPUs, nodes or cores")
        self.out.amount, self.out.resource = int(n), RESOURCES[self.take().low]

    def accel(self) -> None:
        t = self.tok
        self.once("accelerator", t)
        if t.low == "any":
            self.take()
            self.expect_word("type", "types")
            self.out.any_type = True
            return
        self.out.types.append(self.take().text)
        while self.tok.kind == "word" and self.tok.low == "or":
            self.take()
            if self.tok.kind != "word" or self.tok.low in KEYWORDS:
                self.error("expected an accelerator type after 'or'")
            self.out.types.append(self.take().text)

    def finish(self) -> None:
        t = self.take()
        self.once("finish", t)
        if t.low in ("finish", "done"):
            self.expect_word("by", "before")
        self.out.finish_by = self.when()

    def start(self) -> None:
        t = self.take()
        self.once("start", t)
        if t.low == "start" and self.tok.kind == "word" and self.tok.low in ("after", "from", "at", "on"):
            self.take()
        self.out.start_at = self.when()

    def window(self) -> None:
        t = self.take()
        self.once("window", t)
        if t.low == "this":
            self.out.window = self.expect_word("weekend", "week").low
        else:
            self.out.window = "tonight"

    def budget(self) -> None:
        t = self.take()
        self.once("budget", t)
        if self.tok.kind == "cur" or (self.tok.kind == "word" and self.tok.low in CURRENCIES):
            cur = CURRENCIES[self.take().low]
            amount = self.number("the amount")
        else:
            amount = self.number("an amount (e.g. 'under 200 EUR')")
            if not (self.tok.kind == "cur" or (self.tok.kind == "word" and self.tok.low in CURRENCIES)):
                self.error("expected a currency (EUR, USD, GBP, €, $, £)")
            cur = CURRENCIES[self.take().low]
        if amount <= 0:
            self.error("the budget must be above 0", self.toks[self.i - 1])
        self.out.budget, self.out.currency = amount, cur

    def duration(self) -> None:
        t = self.tok
        self.once("duration", t)
        explicit_for = t.low == "for"
        if t.low in ("for", "at"):
            self.take()
        n = self.number("a duration (e.g. 'for 3 hours')")
        if self.tok.kind != "word" or self.tok.low not in UNITS:
            self.error("expected a time unit (s, min, h, hours, days)")
        seconds = n * UNITS[self.take().low]
        if not 1 <= seconds <= 365 * 86400:
            self.error("the duration must be 1 s .. 365 days", self.toks[self.i - 1])
        self.out.duration_s = seconds
        if self.tok.kind == "word" and self.tok.low in ("each", "per"):
            self.out.per_item = True
            if self.take().low == "per":
                if self.tok.kind != "word":
                    self.error("expected what the duration is per (e.g. 'per frame')")
                self.take()
        elif not explicit_for:
            self.error("expected 'each' or 'per ITEM' after a bare duration (or write 'for N hours')")

    def when(self) -> When:
        t = self.tok
        nxt = False
        if t.kind == "word" and t.low == "next":
            self.take()
            nxt = True
        t = self.tok
        if t.kind == "word" and t.low in DAY_ABBREV:
            self.take()
            return When(day=DAY_ABBREV[t.low], time=self.maybe_time(), next_week=nxt, column=t.column)
        if nxt:
            self.error("expected a weekday after 'next'")
        if t.kind == "word" and t.low in ("today", "tomorrow", "tonight"):
            self.take()
            return When(relative=t.low, time=self.maybe_time(), column=t.column)
        if t.kind == "date":
            self.take()
            return When(date=t.text, time=self.maybe_time(), column=t.column)
        if t.kind == "time":
            return When(relative="today", time=self.maybe_time(), column=t.column)
        self.error("expected a time: a weekday [HH:MM], today/tomorrow [HH:MM], YYYY-MM-DD [HH:MM] or HH:MM")

    def maybe_time(self) -> str | None:
        if self.tok.kind == "word" and self.tok.low == "at":
            self.take()
            if self.tok.kind != "time":
                self.error("expected HH:MM after 'at'")
        if self.tok.kind != "time":
            return None
        t = self.take()
        h, m = (int(x) for x in t.text.split(":"))
        if h > 23 or m > 59:
            raise IntentSyntaxError(self.text, t.column, f"time {t.text} is not HH:MM (00:00 .. 23:59)")
        return f"{h:02d}:{m:02d}"


def parse_intent(text: str) -> Intent:
    """The :class:`Intent` of ``text``; :class:`IntentSyntaxError` (with the column) if it is not the grammar."""
    return _IntentParser(text).intent()
