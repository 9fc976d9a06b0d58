"""A small discrete-event simulation of one serving replica, to check the closed forms of
``planning/schedulers.py`` against (tests only; a plan never runs it).

Requests arrive as ``Traffic.arrivals``, with lengths drawn from its distributions. The replica runs
one of the schedulers step by step with the same step times the closed forms take (``Steps``):

* continuous: each step decodes one token for every running request and, with a token budget,
  carries chunks of waiting prompts (first come, first served) up to the budget; without one, a
  waiting prompt is prefilled alone before the next decode step. A prompt's first token comes at the
  end of the step that finishes it; at most ``max_batch`` requests are in flight.
* static: when idle, the waiting requests (up to ``max_batch``) are prefilled together, then decoded
  until the longest output ends.
* disaggregated: one prefill replica serves prompts in order; the cache then goes to a decode replica
  that decodes its running requests with no prefill between steps.

Returns every request's TTFT and TPOT (``(end - first token) / (output - 1)``, as vLLM's benchmark
computes it), after a warm-up tenth. Running requests are kept by the decode step that ends them (a
heap), and a run of decode-only steps (nothing waiting, no arrival) is stepped through without the
scheduling: the same times as step by step, at a cost per finishing request rather than per token.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable

import numpy as np

from ecobench.planning.traffic import Traffic


def simulate(scheduler: str, rate_per_s: float, traffic: Traffic, decode_s: Callable[[int], float],
             token_s: float, request_s: float = 0.0, *, budget: int | None = None, max_batch: int = 10**9,
             kv_token_s: float = 0.0, n: int = 20000, seed: int = 0) -> dict[str, np.ndarray]:
    """TTFT and TPOT (seconds) of each request after the warm-up."""
    rng = np.random.default_rng(seed)
    arrive = traffic.arrivals(rng, rate_per_s, n)
    lin = np.maximum(1, np.round(traffic.input.draw(rng, n))).astype(int)
    lout = np.maximum(1, np.round(traffic.output.draw(rng, n))).astype(int)
    first, done = np.full(n, np.nan), np.full(n, np.nan)
    run = {"continuous": _continuous, "static": _static, "disaggregated": _disaggregated}[scheduler]
    run(arrive, lin, lout, first, done, decode_s, token_s, request_s, budget, max_batch, kv_token_s)
    k = slice(n // 10, None)
    many = lout[k] > 1
    return {"ttft_s": (first - arrive)[k],
            "tpot_s": ((done - first)[k] / np.maximum(lout[k] - 1, 1))[many]}


class _Running:
    """The requests decoding together: each finishes at a known decode step (a heap of those steps),
    so a step costs the requests it finishes, not the batch."""

    def __init__(self) -> None:
        self.step = 0
        self.heap: list[tuple[int, int]] = []  # (the step that gives its last token, id)

    def __len__(self) -> int:
        return len(self.heap)

    def add(self, r: int, tokens: int) -> None:
        heapq.heappush(self.heap, (self.step + tokens, r))

    def decode(self, t: float, done: np.ndarray) -> None:
        """One token for each running request at time ``t``; the finished leave."""
        self.step += 1
        while self.heap and self.heap[0][0] <= self.step:
            done[heapq.heappop(self.heap)[1]] = t

    def decode_until(self, t: float, step_s: float, until: float, done: np.ndarray) -> float:
        """Decode steps of ``step_s`` from ``t`` while nothing else can happen: until the first request
        finishes or a step would start at or after ``until`` (the next arrival); the time after."""
        k = self.heap[0][0] - self.step
        if until < math.inf:
            k = min(k, max(1, math.ceil((until - t) / step_s)))
        for _ in range(k - 1):  # the times as step-by-step addition gives them
            t += step_s
        t += step_s
        self.step += k - 1
        self.decode(t, done)
        return t


def _join(r: int, t: float, lout: np.ndarray, first: np.ndarray, done: np.ndarray, active: _Running) -> None:
    first[r] = t
    if lout[r] > 1:
        active.add(r, int(lout[r]) - 1)
    else:
        done[r] = t


def _continuous(arrive, lin, lout, first, done, decode_s, token_s, request_s, budget, max_batch, kv) -> None:
    n, t, i = len(arrive), 0.0, 0
    arrive, lin = arrive.tolist(), lin.tolist()  # Python numbers: a step costs less
    waiting: deque[list[int]] = deque()  # [id, prompt tokens left]
    active = _Running()
    while i < n or waiting or active:
        while i < n and arrive[i] <= t:
            waiting.append([i, lin[i]])
            i += 1
        admitted = itertools.islice(waiting, max(0, max_batch - len(active)))
        if budget is None:
            if next(admitted, None) is not None:
                w = waiting.popleft()
                t += token_s * w[1] + request_s
                _join(w[0], t, lout, first, done, active)
            elif active:
                until = arrive[i] if i < n and not waiting else math.inf
                t = active.decode_until(t, decode_s(len(active)), until, done)
            else:
                t = arrive[i]
            continue
        room, chunk, finished = budget - len(active), 0, []
        for w in admitted:
            if room <= 0:
                break
            take = min(room, w[1])
            w[1] -= take
            room -= take
            chunk += take
            if w[1] == 0:
                finished.append(w[0])
        if not active and chunk == 0:
            t = arrive[i]
            continue
        if chunk == 0:  # decodes only until a request finishes or arrives
            until = arrive[i] if i < n and not waiting else math.inf
            t = active.decode_until(t, decode_s(len(active)), until, done)
            continue
        t += (decode_s(len(active)) if active else 0.0) + token_s * chunk + request_s * len(finished)
        active.decode(t, done)
        for r in finished:
            waiting.popleft()
            _join(r, t, lout, first, done, active)


def _static(arrive, lin, lout, first, done, decode_s, token_s, request_s, budget, max_batch, kv) -> None:
    n, t, i = len(arrive), 0.0, 0
    while i < n:
        t = max(t, arrive[i])
        j = min(n, i + max_batch, int(np.searchsorted(arrive, t, side="right")))
        batch = np.arange(i, j)
        t += token_s * lin[batch].sum() + request_s
        first[batch] = t
        step = decode_s(len(batch))
        done[batch] = t + (lout[batch] - 1) * step
        t += (lout[batch].max() - 1) * step
        i = j


def _disaggregated(arrive, lin, lout, first, done, decode_s, token_s, request_s, budget, max_batch,
                   kv) -> None:
    n, free = len(arrive), 0.0
    ready = []
    for a, li in zip(arrive.tolist(), lin.tolist(), strict=True):  # the prefill replica, in arrival order
        free = max(free, a) + token_s * li + request_s
        ready.append(free + kv * li)
    first[:] = ready
    order = np.argsort(ready, kind="stable").tolist()
    t, i = 0.0, 0
    active = _Running()
    while i < n or active:
        while i < n and ready[order[i]] <= t and len(active) < max_batch:
            r = int(order[i])
            if lout[r] > 1:
                active.add(r, int(lout[r]) - 1)
            else:
                done[r] = first[r]
            i += 1
        if active:
            t += decode_s(len(active))
            active.decode(t, done)
        else:
            t = max(t, ready[order[i]])
