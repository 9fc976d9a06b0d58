"""The schedulers' queue models (planning/schedulers.py) against the discrete-event simulation of the
same replica (planning/simulate.py) at 30-90% of its capacity: medians within 10%, 99th percentiles
within 20% (issue 22), for TTFT and for the per-request TPOT."""

import dataclasses
import math

import numpy as np
import pytest

from ecobench.planning.queueing import gg1_wait
from ecobench.planning.schedulers import SCHEDULERS, Steps, prefill_pool_ttft
from ecobench.planning.simulate import simulate
from ecobench.planning.traffic import Lengths, Traffic
from ecobench.planning.ttft_dist import Ttft

# decode step a + b * batch (s), prefill per prompt token (s), per request (s)
REPLICA = (0.01, 0.0002, 0.05 / 512, 0.002)
BATCH = np.arange(1, 257)
TRAFFIC = {
    "fixed": Traffic(Lengths(512), Lengths(100)),
    "spread": Traffic(Lengths(512, 0.5), Lengths(100, 0.5)),
    "bursty": Traffic(Lengths(512), Lengths(100), arrival_cv=1.5),
    "long_tail": Traffic(Lengths(512), Lengths(100, 1.5)),  # outputs of CV 1.5: many of a few tokens
}
CASES = [("continuous", 2048), ("continuous", None), ("static", None), ("disaggregated", None)]


def _compare(scheduler, budget, traffic, load, n=20000):
    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    op = SCHEDULERS[scheduler](steps, traffic, budget=budget, ttft_ok=None)
    if scheduler == "disaggregated":  # one prefill replica at `load`, a decode replica at that rate
        prefill = tok * traffic.input.mean + req
        rate = load / prefill
        x = np.interp(rate, BATCH / ((traffic.output.mean - 1) * (a + b * BATCH)), BATCH)
        ttft = {q: 1e3 * float(prefill_pool_ttft(steps, traffic, np.array([load])).quantile(q)[0])
                for q in (0.5, 0.99)}
    else:
        rate = load * op.rate_per_s[op.feasible].max()
        x = np.interp(rate, op.rate_per_s, BATCH)
        ttft = {q: float(np.interp(x, BATCH, op.latency_ms("ttft", q))) for q in (0.5, 0.99)}
    tpot = {q: float(np.interp(x, BATCH, op.latency_ms("tpot", q))) for q in (0.5, 0.99)}
    sim = simulate(scheduler, rate, traffic, lambda k: a + b * k, tok, req, budget=budget, max_batch=256, n=n)
    err = {}
    for name, model in (("ttft", ttft), ("tpot", tpot)):
        for q in (0.5, 0.99):
            err[f"{name}_p{round(q * 100)}"] = model[q] / (1e3 * np.quantile(sim[f"{name}_s"], q)) - 1
    return err


def _check(err):
    bad = {k: round(v, 3) for k, v in err.items() if abs(v) > (0.10 if k.endswith("p50") else 0.20)}
    assert not bad, bad


@pytest.mark.parametrize("scheduler,budget", CASES)
def test_queue_model_agrees_with_the_simulation_at_60_pct_load(scheduler, budget):
    _check(_compare(scheduler, budget, TRAFFIC["fixed"], 0.6, n=8000))


# The simulation's own quantiles scatter from run to run where the queue relaxes slowly: bursty arrivals
# at 90% load give p99 TTFTs 20% apart between seeds at 100,000 requests (measured 2026-11-26), so
# those run 400,000. Static batches at 90% load run 4,000,000 (2 s of simulation): a batch's size wanders
# for hundreds of cycles there, and long-tailed outputs' TTFT p50 is 14.9, 14.4, 13.6, 13.0 s over seeds
# 0-3 at 100,000 requests, 12.7, 12.8, 13.1, 12.4 s at 400,000 and 12.7-12.8 s (seed 3: 12.5) at
# 4,000,000; TTFT p99 96, 94, 86, 62 s; 57, 58, 75, 76 s; 67, 69, 71, 83 s (measured 2026-11-29).
def _requests(scheduler, traffic, load):
    if scheduler == "static" and load == 0.9:
        return 4_000_000
    return 400_000 if traffic == "bursty" and load == 0.9 else 100_000


# Where the closed forms do not hold the targets (measured 2026-11-27 against these runs, and seeds 1
# and 2 in brackets):
# * continuous batching under bursts without a token budget, at middle load: not the decode steps
#   between prefills (Lindley's recursion with a decode step of the mean concurrency's length run
#   whenever no prompt waits gives the simulated TTFTs, p50 94 ms against 94, and within 1 ms at every
#   quantile from 0.2 to 0.99 the GI/D/1 wait of the same arrivals plus a uniform share of a step, as
#   the model takes it), but the GI/D/1 wait of those who wait: under bursts short waits are rarer than
#   the gamma of M/G/1's shape has them (its 0.25 quantile 0.62 mean prefills against 0.80 simulated at
#   prefill load 0.41), and TTFT p50 falls there. (A gamma of the shape that one more step of Lindley's
#   recursion gives, 1.58 against 1.35, brought it to -7% (-8%, -8%) but every bursty TTFT p99 4-7 points
#   lower, -21% at load 0.9 with a budget on seed 2: not taken.) With a budget, a burst's prompts
#   finishing together in one chunked step is in the model: arrivals.arrivals_after; TTFT p50 at
#   load 0.3 went from -14% to +1% (-2%, seed 2: -1%);
# * the slot limit: at 90% load a bursty stream fills all 256 slots now and then (1% of the time without
#   a budget), and the closed form has no wait for a free slot. It is all of the gap: the simulation
#   without a slot limit gives TTFT p99 656, 638, 641 ms (seeds 0, 1, 2), the model 641 ms (measured
#   2026-11-27, later). A wait for a slot needs the concurrency's tail, which the flow-equivalent chain
#   does not have: at the arrivals' peakedness (2.25) it holds 250 slots or more 3e-4 of the time and all
#   256 never (to 4 decimals). Since 2026-11-29 it is in the model (schedulers._slot_wait): the share
#   that finds every slot held (the chain up to 256 at the swings of the requests in flight, which each
#   prompt's prefill widens: it holds up every decode; past 256 the queue for slots) waits, instead of
#   the prompts' queue, a GI/G/1 wait at the full replica's rate R(256) (ttft_dist.Ttft.slot_p). That
#   share and wait, this / simulated (400,000 requests, seeds 0, 1, 2): 0.018 / 0.019, 0.021, 0.026 and
#   1.68 s / 1.66, 1.43, 1.49 s. TTFT p99 -55% (-59%, -62%) before, -2% (-9%, -16%) now; TTFT p50 -5%
#   (-6%, -6%) before, -3% (-4%, -4%) now; with a budget TTFT p99 -9% (-14%, -16%) before, +14% (+8%,
#   +5%) now, p50 +3% (+3%, +2%) before, +5% (+5%, +4%) now. But the simulation's p99 still grows with
#   its length there: at 2,000,000 requests 2,247, 1,929, 1,941 ms (400,000: 1,429, 1,549, 1,671), the
#   share finding the slots full 0.033, 0.028, 0.029 (their wait 1.80, 1.71, 1.62 s), and the model's
#   p99 (1,404 ms) -38% (-27%, -28%) of it: rare long spells at the limit, which a run of 400,000 sees
#   too few of. Elsewhere at load 0.9 (seeds 0, 1, 2; loads 0.3 and 0.6 and TPOT unchanged everywhere):
#   TTFT p99 of fixed lengths with a budget +10% (+2%, +4%) before, +11% (+3%, +5%) now, without -6%
#   (-12%, -9%) before, -4% (-10%, -7%) now; spread lengths +16% (+12%, +4%) -> +17% (+13%, +5%) and
#   -2% (-7%, -9%) -> -1% (-6%, -8%); exponential lengths without a budget -3% (-2%, -4%) -> -3% (-1%,
#   -3%); bursty long-tailed outputs under a budget +5% (+38%, +21%) -> +6% (+39%, +22%). Tried and not
#   taken (with the slot's wait read at 16 of its quantiles, since in closed form: 3 points apart): the
#   share read as the replica without a limit holding 256 or more (the chain past 256 at its own
#   capacity, 0.042), +74% (+60%, +48%); Hayward's M/M/(c / z) with c servers each held
#   a request's life gives a share of 2e-16 (see schedulers._slot_wait). (The larger concurrency that
#   bursts bring to TPOT is in the model: arrivals.peakedness; TPOT p50 at load 0.9 went from -12%
#   (-11%, -12%) to -2% (-0%, -2%) with a budget, from -12% (-11%, -13%) to -2% (-1%, -3%) without.)
# TPOT of long-tailed outputs ("long_tail": CV 1.5, an eighth of the requests one token and as many
# again under ten): until 2026-11-27 (later) one gamma per concurrency, its SD the mean of the output
# points' 1 / sqrt(tokens), gave TPOT p99 without a budget -55%, -51%, -47% at loads 0.3, 0.6, 0.9
# (seeds 1 and 2 within 4 points), with one -55%, -43%, -15%, disaggregated -34%, -32%, -30%, and p50
# -5% to -8%: the p99 is a request of a few tokens whose steps the prompts arriving before its first
# decode step stretch (unchunked, all that arrived during its TTFT are prefilled first; chunked, what
# arrived during the step that finished its prompt shares its first step), or, disaggregated, whose
# first decode token waits out the step in progress. A mixture over the output's points given two tokens
# or more (schedulers._request_tpot, tpot_dist.decoded_points) now: -16%, +6%, +5%; -15%, -5%, +3%; +1%, +4%,
# +6% (seeds 1 and 2: -16%, +6%, +1%; -15%, -4%, +3%; +1%, +5%, +7%; and -15%, +7%, +8%; -15%, -5%,
# +4%; +1%, +5%, +7%), p50 within 2% (seed 2 at load 0.9 without a budget: +5%). Under a renewal stream
# the prompts arriving after a request's own are counted from its arrival (arrivals.renewal_count:
# bursts bring more, a smoother stream fewer than the rate times the time). What it changed elsewhere
# (seed 0, seeds 1 and 2 alike): near-regular arrivals' TPOT p99, continuous, +5% to +11% before, +6%
# to +15% now; disaggregated +7% to +11% before, +10% to +14% now, and at load 0.9 with Poisson or
# bursty arrivals +14% before, +16% now (the join is in the simulation too: a step's share over a
# request's tokens, on top of a concurrency spread the model already has too wide there); Poisson and
# bursty continuous cases within 2 points or closer (spread lengths at load 0.9: -12% to -16% before,
# -6% to -11% now). Outside the grid, bursty arrivals with long-tailed outputs (arrival and output CV
# 1.5), TPOT p99 without a budget: -67%, -65% to -69%, -60% to -65% before; -7%, -3% (seeds 1 and 2:
# +9%, -2%), -6% (+6%, -3%) now; with a budget of 2,048 still out: -53% to -56%, -53% to -54%, +11% to
# +12% before, -21% to -25%, -29%, +31% to +33% now (p50 -13% to -19% before, -4% to -10% now).
# Under a token budget a step carries at most its room of prompt tokens, so no TPOT exceeds a decode
# step plus a full step's prefill (and the prompts finishing in it): 2,048 - 81 tokens, 192 ms here;
# the gamma mixture of the prefills' extra has no such bound, and at load 0.9 gave TPOT p99 307 ms
# against 234 simulated (a request of one decode token: its one step at most 229 ms at the mean
# concurrency). The extra's quantile is capped there now (Operating.tpot_most): +15% (+16%, +15%) from
# +31% (+33%, +32%); no case of the grid changes (seed 0, every traffic with a budget). At loads 0.3
# and 0.6 it stays -23% (-21%, -25%) and -29% (-29%, -29%): a request of one decode token has a
# simulated TPOT median of 66 ms at load 0.6 (p90 217 ms: a full step), the model's 15 ms (p90 141):
# after a request arrives in a burst, the prompts of the same burst queue behind it and fill its first
# decode steps. The model counts the prompts arriving during the step that finishes its prompt (from
# its own arrival, arrivals.renewal_count), not those that arrived during its own wait; counting
# those too (the renewal count over its wait and that step) gives +36% and +30% (measured 2026-11-27,
# seed 0), and the chance of no prompt at all read from its own arrival (the gap after it outlasting
# its life) -30% and -33%: neither taken. What a burst leaves queued behind a request when its prompt
# finishes (the count of a burst's rest, not the renewal mean) is the missing piece.
# It is in the model since 2026-11-28 (arrivals.left_behind): of the prompts that arrive after a
# request and before the step that finishes its prompt starts, that step carries those that fit in the
# room its own end leaves (uniform within the step), and the rest queue for its first decode steps; the
# count is added to the window its first step carries, for every arrival stream (Poisson too). TPOT p99,
# seeds 0 (1, 2), at loads 0.3, 0.6, 0.9: bursty long-tailed outputs under a budget -23%, -29%, +15%
# before; -8% (-5%, -11%), -6% (-6%, -7%), +15% (+16%, +16%) now; TPOT p50 -4% to -8% before, -3% to +3%
# now. Elsewhere with a budget (seeds 0-2): Poisson long-tailed outputs at load 0.6 -5% before, -1% to
# +0% now, at load 0.9 +3% to +4% before, +14% now; fixed lengths at 0.9 -10% to -15% before, -9% to
# -14% now; spread lengths at 0.9 -4% to -10% before, -2% to -8% now; bursts on fixed lengths at 0.9
# +0% to +2% before, +3% to +5% now (TPOT p50 +4% to +5%); near-regular arrivals unchanged (nothing
# waits behind a prompt there); TTFT unchanged everywhere. CPU time of benchmarks/bench_serving_plan.py:
# each token budget now has a TPOT of its own (before, budgets with the same first step shared one): 0.13 s.
# Static batches of long-tailed outputs: a cycle (prefill, then decode to the batch's longest output) is
# concave in the batch (the longest of n outputs of CV 1.5: 100, 166, 210 tokens for n = 1, 2, 3), so
# over the batch sizes that vary from cycle to cycle the mean cycle is shorter than the cycle at the mean
# batch, and more cycles see no arrival. Until 2026-11-27 (later) the cycle was read at the mean batch:
# at load 0.3 (row 2) a mean batch of 2.97 and cycle 2.39 s, 11% of requests finding the replica idle,
# against 2.5, 1.89 s and 16% simulated; TTFT p50 +31% (+32%, +30%), p99 +22% (+26%, +27%). The cycle
# over the batch's distribution now (arrivals in a cycle a negative binomial count of the recursion's
# mean and variance, in the last two rounds: schedulers._batch_mass, _over_batches): 2.54, 1.98 s, 14%;
# TTFT p50 +1% (+2%, +1%), p99 -2% (+1%, +2%), TPOT within 8%. Elsewhere (seeds 0-2): spread lengths'
# TTFT p50 at load 0.3 +3% before, -1% now, every other static case within a point of before; fixed
# lengths and bursts on fixed lengths unchanged (a cycle linear in the batch: the distribution is not
# read). CPU time of benchmarks/bench_serving_plan.py within 2-5% of before.
# At load 0.9 the gap was another one: the mean batch stays 52 in the model, 59.7 simulated (100,000
# requests), its variance 1,195 against 1,884 (p99 228, 0.6% of batches at the 256-slot limit, 0.9% of
# requests waiting a further cycle for a slot); the cycle a request arrives in has p99 50 s in the model, 95
# s simulated. There a batch's excess carries almost whole into the next (R c'(B) near 1: the rate rises
# little with the batch, the row at 90% of the top rate is 52), so the batch sizes' tail is not the two
# moments' (and the slot limit binds). Part of that gap was the simulation's: its batches wander for
# hundreds of cycles, and over 1,000,000 requests (seeds 0, 1, 2) the mean batch is 53.7, 53.7, 53.4, its
# variance 1,266, 1,102, 1,282, 0.52%, 0.14%, 0.35% of batches at the limit (the model's recursion 52.1,
# 1,195; hence 4,000,000 requests at load 0.9 above). The rest is the tail: the TPOT p99 is the limit's
# decode step (61.2 ms in every 4,000,000-request run; the recursion's normal gave 44.7) and the cycles'
# length-biased tail sets TTFT p99. Since 2026-11-29 the rows whose recursion's batches reach the limit 1e-4
# of the time or more (schedulers.STATIC_CHAIN_REACH) read a Markov chain over the requests waiting when a
# cycle starts (planning/static_chain.py: batch -> cycle -> a negative binomial count of arrivals -> next,
# with the 256 slots and up to 256 left over; over every size 52.1, 1,204, 0.18% at the limit, on 8 + 24
# geometric states as it runs, within the same figures): TPOT the decode step at the batch a request is in
# (size-biased), TTFT the cycle it arrives in over the batches and their longest outputs, the next batch's
# prefill capped at the slots, and the share left over waiting one more full cycle (Ttft.slot_p; 0.2% of
# requests here). Before -> after against 4,000,000 requests (seeds 0, 1, 2): TTFT p50 -1% (-0%, -0%) -> -3%
# (-2%, -2%), p99 -21% (-24%, -26%) -> -6% (-8%, -11%); TPOT p50 +8% -> +0%, p99 -27% -> -15% (all three
# seeds; -15% is the quantiles interpolated between row 40, the recursion's, and row 58, the chain's: read
# at the load's own rate the chain gives 61.2 ms). Against the 100,000-request run: TTFT p50 -15% -> -17%,
# p99 -45% -> -34%, TPOT p99 -27% -> -15%. Exponential lengths at load 0.9 (below, 4,000,000 requests): TTFT
# p99 -9% (-15%, -13%) -> -4% (-10%, -8%), TPOT p99 -15% (-21%, -17%) -> -10% (-17%, -13%), p50s within 3
# points of before. Every other static case of the grid and of the prompt lengths and smooth arrivals below
# (loads 0.3, 0.6, 0.9; seeds 0-2) reads no chain row and is unchanged. Everywhere (every row from 1) the
# chain measured as well at load 0.9 but worse at lighter loads (it leaves out the prompts' spread within a
# cycle: long inputs' TTFT p99 at load 0.3 -12% -> -20%) and cost a plan a chain per row read: not taken.
# CPU time of benchmarks/bench_serving_plan.py 1.56-1.73 s before, 1.80-1.98 s now (the same loaded machine,
# alternating runs: about +0.23 s). With 16 slots (rows 12, 13 of 16, 1,000,000 requests, seeds 0 and 1) the
# TPOT quantiles are the simulation's (before: p99 +68% long-tailed outputs, +13% fixed, +24% bursts), but
# TTFT still -33% to -56% (long tails), -3% to +2% (fixed), -11% to -38% (bursts) at load 0.9, up to -90% at
# 0.97: a queue many full batches long, of which the chain kept one batch left over (its states geometric
# past 8, whose cells lose a queue's slow drift: with 16 batches left over TTFT came out +300% to +2,000%).
# See test_static_tpot_at_a_binding_slot_limit_is_the_batch_chains, and since 2026-11-29 (later)
# test_static_ttft_behind_full_batches_at_a_binding_slot_limit (docs/serving.md, "Static queues several
# full batches long").
KNOWN_GAPS = {
    ("bursty", "continuous", None, 0.6): "TTFT p50 -10% (-11%, -11%): the short waits of bursts",
    # within the targets against this run (400,000 requests: TTFT p99 -2% (-9%, -16%) since the wait
    # for a slot, 2026-11-29), but not against longer ones: at 2,000,000 requests the simulated p99 is
    # 1,929-2,247 ms against the model's 1,404 (-27% to -38%): spells at the slot limit are rare, and a
    # run of 400,000 holds too few of them to set its p99 (measured by the helper slot22)
    ("bursty", "continuous", None, 0.9): "TTFT p99 -27% to -38% against 2,000,000-request runs: the slot "
                                         "limit's rare long spells",
}


@pytest.mark.slow
@pytest.mark.parametrize("scheduler,budget", CASES)
@pytest.mark.parametrize("traffic", list(TRAFFIC))
@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_queue_model_agrees_with_the_simulation_at_every_load(scheduler, budget, traffic, load, request):
    gap = KNOWN_GAPS.get((traffic, scheduler, budget, load))
    if gap:
        request.applymarker(pytest.mark.xfail(reason=f"a known gap of the closed form: {gap}", strict=False))
    _check(_compare(scheduler, budget, TRAFFIC[traffic], load, n=_requests(scheduler, traffic, load)))


BURSTY_LONG_TAIL = Traffic(Lengths(512), Lengths(100, 1.5), arrival_cv=1.5)
BURSTY_LONG_TAIL_GAPS: dict[float, str] = {}  # closed 2026-11-28 by arrivals.left_behind (see above)


@pytest.mark.slow
@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_bursty_long_tailed_outputs_under_a_budget(load, request):
    """Outside the grid: arrival and output CVs 1.5, a budget of 2,048 tokens (see above)."""
    gap = BURSTY_LONG_TAIL_GAPS.get(load)
    if gap:
        request.applymarker(pytest.mark.xfail(reason=f"a known gap of the closed form: {gap}", strict=False))
    _check(_compare("continuous", 2048, BURSTY_LONG_TAIL, load, n=100_000))


# Prompt lengths that vary as much as served traffic's (measured 2026-11-28, seeds 0 (1, 2), Poisson
# arrivals, 100,000 requests): "exponential", input and output lengths of CV 1, and "long_inputs", input
# CV 1.5 (a fifth of the prompts under 50 tokens, the 99th percentile 3,600) with outputs of one length.
# Until this date a TTFT quantile was solved over 8 of the 64 input-length points (the middle one of each
# group of 8), which put the disaggregated prefill pool's TTFT p50 of long inputs at load 0.3 at +25%
# (+25%, +25%), of spread lengths at +7%: the median fell on one of 8 atoms. Over 16 points
# (ttft_dist.SOLVE_POINTS): +9% (+9%, +9%) and +3% (over 32: +2% and +1%, at three times the CDF's
# cost); continuous batching with a budget at load 0.3 +13% -> +8%; no other case of the grid moves by
# more than 0.6 points. Where the targets still fail (seed 0):
# * under a token budget at middle and high load, TTFT p50 high: the queue's work per prompt charges
#   every prompt token the mean step's share of a decode step (``per_token``), but a long prompt fills
#   its own steps and pays less. Charging each length point its own steps' share (``t_d L / min(room,
#   max(carried, L))``) brought these within 5% and exponential lengths at load 0.9 within the targets,
#   but put long inputs' TTFT p99 21-33% low and near-regular arrivals' at load 0.9 21-22% low: not taken.
#   The mean work kept and only its spread over lengths taken that way: long inputs' TTFT p50 +12% at
#   loads 0.6 and 0.9, CV 1 lengths' +10% at 0.9, near-regular arrivals' p99 at 0.9 -21%: not taken.
#   The sim's split shows why: a prompt's first chunk starts sooner than the model's wait has it (it
#   shares the step that finishes the prompt ahead) and its own steps last longer (the prompts behind it
#   share its last one), and the two errors cancel only for prompts of one length. Measured 2026-11-29
#   (helper queue23, seed 0): the simulated TTFT split at the start of the step that carries a prompt's
#   first chunk, "start" before it and "span" from it to the first token, p50 / p90 / p99 in ms: long
#   inputs at load 0.9 start 92 / 759 / 1,986, span 181 / 437 / 671 (load 0.6: 12 / 167 / 567 and 64 /
#   221 / 444); fixed lengths at 0.9 49 / 173 / 396 and 136 / 231 / 462. A prompt of a few tokens spans a
#   whole shared step (130 ms at 0.9, 52 ms at 0.6; its service in the model 29 and 16 ms): a step
#   carries what arrived during the one before, ahead of it and behind it (440 tokens behind it on
#   average at 0.9, 150 at 0.6; 630-910 behind a prompt longer than the room, whose 2-3 steps are full).
#   The model's length-free part (the step in progress and the queue's wait) at long inputs, 0.9: 264 /
#   1,054 / 2,178 ms; charged by each length's own steps, 151 / 700 / 1,517 (mean 275 ms against the
#   simulated start's 264): that charge gives the start's mean, but neither its median nor its tail, and
#   the service lacks the shared step. The replica is a gated batch server with a cap (a step carries
#   what arrived during the one before, at most the room): a short, heavy-tailed wait before the step
#   (the step in progress, picked by its length, and the full steps of a backlog), a long step after it
#   (the others' prefill it carries). Tried on top of the per-length charge (seeds 0, 1, 2), none taken:
#   - plus the prompts arriving during a longer-than-room prompt's own full steps, sharing its last one
#     (E[min(their tokens, V room)], V uniform): long inputs at 0.9 TTFT p99 -25% (seed 0) as without it:
#     the p99 is the wait's tail, not the long prompts' own steps;
#   - plus the prompts (Poisson count) arriving during the step in progress, sharing its step, for every
#     arrival stream: exponential lengths within the targets (p50 +2%, +1%, +4% at 0.3, 0.6, 0.9; seeds
#     1, 2 at 0.9 +9%, +6%), long inputs p50 +0.5% (+1.5%, +1.2%) at 0.6, -8% (-3%, -5%) at 0.9, p99 at
#     0.9 -25% (-14%, -53%); but fixed lengths' p50 +9% (+10%, +10%) at 0.6, bursts' at 0.9 +12% (+12%,
#     +11%), long-tailed outputs' +10% to +12% at 0.6 and 0.9, near-regular arrivals' +9% to +12% at 0.9;
#   - the per-length charge alone: long inputs at 0.9 p50 -15% (-11%, -13%), near-regular arrivals' p99
#     at 0.9 -19% to -21% over the seeds (-13% to -16% before), seed 2's p50 at CV 0.01 -10.1%.
#   Without the per-length charge (seed 0): every prompt's wait at a full step's rate (t_d / room per
#   token) gives TTFT p50 -12% to -24% at load 0.9 for every traffic; with the prompts behind a waiting
#   prompt filling its last step, p50 +14% to +23% (near-regular arrivals -6%) and p99 -13% to -33% at
#   0.9; the gated server without the cap (the step a prompt arrives in picked by its length, mean t_d /
#   (1 - rho); its rest and the prefill of all that arrive during it as one gamma, everyone waiting)
#   fixed lengths at 0.9 -8% (p99 -10%) but at 0.6 p50 +12%, long inputs' p50 +27% and +24% at 0.3 and
#   0.6 (uncapped, a long prompt is one step), near-regular arrivals' +38% to +44% at 0.9. What it needs:
#   the capped gated server's wait and step as a mixture over the step a prompt arrives in and its
#   length, which the TTFT's CDF (length points, or static's cycle points, not both) does not hold yet;
# * without a budget at load 0.9, long inputs' TTFT p99 low: the slot limit, as for bursts above (the
#   simulation without it gives 1,020 ms, the model 949 ms; with its 256 slots 1,769 ms). With the wait
#   for a slot (schedulers._slot_wait, 2026-11-29) 1,057 ms: -46% (-30%, -70%) before, -40% (-22%, -66%)
#   now (p50 -5% (-1%, -3%) before, -4% (+1%, -2%) now). The simulation's p99 scatters at 100,000
#   requests (1,769, 1,361, 3,140 ms); at 400,000 1,399, 1,630, 1,560 ms (the model -24%, -35%, -32%),
#   at 2,000,000 1,508, 1,612, 1,496. The model's share that finds the slots full is half the simulated
#   (0.008 against 0.016, 0.021, 0.021 at 400,000) and their wait 1.13 s against 1.42, 1.47, 1.41 s: a
#   long prompt's prefill stalls every decode, so the slots free in lumps the arrivals' peakedness does
#   not give. (Taking the prefill's variance over 1 - rho_p in the slots' freeing, as in the swings:
#   -29% (-8%, -60%), at 400,000 requests -10%, -23%, -19%, but with a budget TTFT p99 +8% (+23%, -32%),
#   and no derivation: not taken.) With a budget at load
#   0.9: TTFT p99 -1% (+13%, -38%) before, +2% (+16%, -36%) now, p50 +23% (+29%, +26%) before, +24%
#   (+30%, +28%) now;
# * static batches at load 0.9 (exponential lengths; seed 0 only, at 100,000 requests): the gap of
#   long-tailed outputs above, closed there by the chain of batch sizes and 4,000,000 requests.
# Seed 2 alone also misses at load 0.9 disaggregated (TTFT p99 -22% exponential, -36% long inputs).
VARIABLE_LENGTHS = {"exponential": Traffic(Lengths(512, 1.0), Lengths(100, 1.0)),
                    "long_inputs": Traffic(Lengths(512, 1.5), Lengths(100))}
VARIABLE_LENGTH_GAPS = {
    ("exponential", "continuous", 2048, 0.9): "TTFT p50 +15% (+20%, +17%), p99 +20% (+24%, +26%)",
    ("long_inputs", "continuous", 2048, 0.6): "TTFT p50 +17% (+18%, +18%)",
    ("long_inputs", "continuous", 2048, 0.9): "TTFT p50 +24% (+30%, +28%)",
    ("long_inputs", "continuous", None, 0.9): "TTFT p99 -40% (-22%, -66%): the slot limit, half the "
                                              "share that waits for a slot",
}


@pytest.mark.slow
@pytest.mark.parametrize("scheduler,budget", CASES)
@pytest.mark.parametrize("traffic", list(VARIABLE_LENGTHS))
@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_queue_model_agrees_with_the_simulation_for_prompt_lengths_that_vary(scheduler, budget, traffic, load,
                                                                              request):
    gap = VARIABLE_LENGTH_GAPS.get((traffic, scheduler, budget, load))
    if gap:
        request.applymarker(pytest.mark.xfail(reason=f"a known gap of the closed form: {gap}", strict=False))
    n = _requests(scheduler, traffic, load)
    _check(_compare(scheduler, budget, VARIABLE_LENGTHS[traffic], load, n=n))


# Arrivals smoother than Poisson (a near-deterministic stream) with lengths that vary: a D/G/1-like
# queue that waits only when a prompt outlasts the gap to the next. Until 2026-11-27 (later), with a
# budget at load 0.9, TTFT p50 +15% (+16%, +15% on seeds 1 and 2): the prompts that arrive before a
# prompt's step starts and share it were counted as Poisson arrivals bring them, plus what bursts bring
# beyond, but nothing taken off for a smoother stream that brings fewer (arrivals.arrivals_after's
# count was clipped at the Poisson one). Unclipped (never below the prompt's own prefill): p50 -5%
# (-4%, -5%), p99 -16% (-13%, -15%) at CV 0.01; -7% (-6%, -7%) and -16% (-14%, -15%) at CV 0.1.
# Beyond these runs (measured then, seed 0, continuous with a budget of 2,048): lengths of CV 1 at load
# 0.9 give TTFT p50 +22% at arrival CVs 0.01, 0.3 and 0.6 (clipped: +30%, +27%, +23%), and fixed lengths
# at arrival CV 0.3, load 0.9, p99 -29% (clipped: -20%); the other 15 of 18 cases hold the targets
# (clipped: 8).
#
# (Before 2026-11-27 the wait of the few who wait was the whole mean wait over a delay probability
# corrected down to 1e-12: TTFTs 1e6-2e7 times the simulated at loads 0.3-0.6. Until later that day the
# TTFT CDF read the prompts' service at 8 of their 64 length points, the highest at the 0.945 quantile,
# where few prompts wait the TTFT p99 is the longest prompts' own prefill: disaggregated at load 0.3,
# p99 -24%; continuous without a budget at 0.6, -19%. With the last group's points every second one,
# to the 0.992 quantile (ttft_dist.SOLVE_TAIL_STEP): +3% and +4%.)
SMOOTH = {cv: Traffic(Lengths(512, 0.5), Lengths(100, 0.5), arrival_cv=cv) for cv in (0.01, 0.1)}
SMOOTH_GAPS: dict[tuple[str, int | None, float], str] = {}


@pytest.mark.slow
@pytest.mark.parametrize("scheduler,budget", CASES)
@pytest.mark.parametrize("arrival_cv", list(SMOOTH))
@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_queue_model_agrees_with_the_simulation_for_smooth_arrivals(scheduler, budget, arrival_cv, load):
    err = _compare(scheduler, budget, SMOOTH[arrival_cv], load, n=100_000)
    gap = SMOOTH_GAPS.get((scheduler, budget, load))
    if gap:
        assert max(abs(v) for v in err.values()) < 0.5, err  # a known gap, not a blow-up
        try:
            _check(err)
        except AssertionError:
            pytest.xfail(f"a known gap of the closed form: {gap}")
    _check(err)


def _lindley_wait(arrival_cv, work_cs2, load, n=200_000):
    """Waits of a GI/G/1 queue of unit mean work (gamma inter-arrival times and work), by Lindley's
    recursion ``W' = max(0, W + S - A)``, after a tenth of the arrivals."""
    rng = np.random.default_rng(0)
    gap = rng.gamma(1 / arrival_cv ** 2, arrival_cv ** 2 / load, n)
    work = rng.gamma(1 / work_cs2, work_cs2, n)
    w, out = 0.0, np.empty(n)
    for i, d in enumerate((work - np.roll(gap, -1)).tolist()):
        out[i] = w
        w = max(0.0, w + d)
    return out[n // 10:]


def test_a_smooth_stream_waits_little_and_those_who_wait_wait_about_a_work():
    """Arrival CV 0.01 at load 0.3, work CV^2 0.25: the delay probability's correction takes it to about
    none, and the wait of those who wait stays a share of a work (it was the uncorrected mean wait over
    that probability: 1e10 mean works), so the mean wait is that share times the probability."""
    p, waited, _ = gg1_wait(np.array([0.3]), np.ones(1), np.array([0.25]), 0.01, 1.25 * 1.5)
    sim = _lindley_wait(0.01, 0.25, 0.3)
    assert p[0] < 0.01 and (sim > 0).mean() < 0.01
    assert 0.1 < waited[0] < 1.0  # simulated: 0.29 mean works
    assert p[0] * waited[0] < 1e-3  # simulated: 2.4e-4


@pytest.mark.parametrize("work_cs2", [0.25, 1.0])
@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_the_wait_of_a_smooth_stream_agrees_with_lindleys_recursion(work_cs2, load):
    """Arrival CV 0.01: the delay probability within 0.01 plus a tenth, the wait of those who wait
    within 20% where more than 1% wait."""
    third = (1 + work_cs2) * (1 + 2 * work_cs2)
    p, waited, _ = gg1_wait(np.array([load]), np.ones(1), np.array([work_cs2]), 0.01, third)
    sim = _lindley_wait(0.01, work_cs2, load)
    sim_p = (sim > 0).mean()
    assert abs(p[0] - sim_p) <= 0.01 + 0.1 * sim_p, (p[0], sim_p)
    if sim_p > 0.01:
        assert abs(waited[0] / sim[sim > 0].mean() - 1) <= 0.2, (waited[0], sim[sim > 0].mean())


def test_the_wait_goes_continuously_to_none_as_the_arrivals_grow_regular():
    """Arrival CV 0, 0.001, 0.01, 0.05, 0.1, 0.3 at loads 0.1-0.95 and work CV^2 0-1.44: the TTFT
    quantiles of the wait rise with the CV (a more regular stream never waits longer) and the wait of
    those who wait stays within a few mean works below load 0.9."""
    loads = np.linspace(0.1, 0.95, 18)
    for cs2 in (0.0, 0.25, 1.0, 1.44):
        prev = None
        for cv in (0.0, 0.001, 0.01, 0.05, 0.1, 0.3):
            p, waited, shape = gg1_wait(loads, np.ones_like(loads), np.full_like(loads, cs2), cv,
                                         (1 + cs2) * (1 + 2 * cs2))
            assert np.all(waited[loads < 0.9] < 10), (cs2, cv, waited)
            zeros = np.zeros_like(loads)
            q = Ttft(zeros, zeros, p, waited, zeros[:, None], shape).quantiles([0.5, 0.9, 0.99])
            if prev is not None:
                assert np.all(q >= prev * 0.99 - 1e-3), (cs2, cv, np.round(q - prev, 4))
            prev = q


def test_chunked_prefill_bounds_tpot_tails_a_whole_prefill_does_not_lengthen():
    """A prompt longer than the budget's room runs over several steps: no decode step waits for a
    whole prefill, so the TPOT is lower than with unchunked prefill at the same rate."""
    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    chunked = SCHEDULERS["continuous"](steps, TRAFFIC["fixed"], budget=512, ttft_ok=None)
    whole = SCHEDULERS["continuous"](steps, TRAFFIC["fixed"], budget=None, ttft_ok=None)
    assert np.all(chunked.rate_per_s == whole.rate_per_s)
    assert not chunked.feasible[BATCH >= 512].any()  # no room left for prompts
    i = 10
    assert chunked.latency_ms("ttft", 0.5)[i] > whole.latency_ms("ttft", 0.5)[i]  # prompts wait for room


def test_throughput_rises_with_batch_and_latency_with_it():
    a, b, tok, req = REPLICA
    op = SCHEDULERS["continuous"](Steps(BATCH[:64], a + b * BATCH[:64], tok, req), TRAFFIC["fixed"],
                                  budget=8192, ttft_ok=None)
    assert np.all(np.diff(op.rate_per_s) > 0) and np.all(np.diff(op.latency_ms("tpot", 0.5)) > 0)
    assert np.all(op.latency_ms("tpot", 0.99) >= op.latency_ms("tpot", 0.5))
    assert np.all(op.latency_ms("ttft", 0.99) >= op.latency_ms("ttft", 0.5))


def test_static_tpot_is_the_decode_step_and_disaggregated_needs_no_prefill_between_steps():
    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    st = SCHEDULERS["static"](steps, TRAFFIC["fixed"], budget=None, ttft_ok=None)
    dis = SCHEDULERS["disaggregated"](steps, TRAFFIC["fixed"], budget=None,
                                      ttft_ok=lambda d: 1e3 * d.quantile(0.99) <= 500)
    cont = SCHEDULERS["continuous"](steps, TRAFFIC["fixed"], budget=8192, ttft_ok=None)
    # the batch a request is in, picked by its size: B + Var(B) / B, where Var(B) is at least the
    # Poisson B and more as a long cycle's larger next batch carries on
    assert 1e3 * (a + b * 33) <= st.latency_ms("tpot", "mean")[31] <= 1e3 * (a + b * 36)
    assert dis.latency_ms("tpot", 0.5)[31] < cont.latency_ms("tpot", 0.5)[31]
    assert 0 < dis.prefill_load < 1 and np.all(dis.latency_ms("ttft", 0.99) <= 500 + 1e-6)


# Below batch 1's rate (a replica idle between requests) the latencies were those of batch 1's rate,
# one request always in flight: for prompt-heavy traffic (512 tokens in, 2-5 out) TTFT p99 1,626 ms
# against 155 ms simulated at a fifth of that rate (measured 2026-11-27). The same scheduler below
# concurrency 1 (Operating.light) gives the queue at the rate itself. Until 2026-11-27 (later) every
# prompt there was charged a share of a decode step in proportion to the rate: with a token budget at
# half batch 1's rate TTFT p50 +30%, +20%, +16% (outputs 2, 5, 17), and at 5% of it with 100-token
# outputs p99 -25%. A prompt finds a decode under way only if a request is decoding (Ttft.bare: the
# others run alone); where that does not hold the targets (measured then):
# * outputs of 2 with a budget at half batch 1's rate: those who wait run with the decode of the prompt
#   before them (its one decode step), which the mixture gives them only in its share: TTFT p50 +12%.
LIGHT_GAPS = {(2048, 2, 0.5): "TTFT p50 +12%"}


@pytest.mark.parametrize("budget", [2048, None])
@pytest.mark.parametrize("output", [2, 5, 17, 100])
@pytest.mark.parametrize("share", [0.05, 0.2, 0.5, 0.9])
def test_latencies_below_batch_1s_rate_are_those_of_the_rate(budget, output, share, request):
    from ecobench.planning.serving import at_rate

    if gap := LIGHT_GAPS.get((budget, output, share)):
        request.applymarker(pytest.mark.xfail(reason=f"a known gap below batch 1: {gap}", strict=True))
    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    traffic = Traffic(Lengths(512), Lengths(output))
    op = SCHEDULERS["continuous"](steps, traffic, budget=budget, ttft_ok=None)
    rate = share * op.rate_per_s[0]
    got = at_rate(op, rate, 1.0, [("p50", 0.5), ("p99", 0.99)])
    sim = simulate("continuous", rate, traffic, lambda k: a + b * k, tok, req, budget=budget, max_batch=256,
                   n=20000)
    for q, limit in ((0.5, 0.10), (0.99, 0.20)):  # issue 22's targets, TTFT
        want = 1e3 * np.quantile(sim["ttft_s"], q)
        assert abs(float(got[f"ttft_ms_p{round(q * 100)}"]) / want - 1) < limit, (q, got, want)
    assert float(got["batch"]) == 1.0  # the reported concurrency stays batch 1's (its capacity's)


def test_requests_of_one_token_do_not_set_tpot():
    """A TPOT is a request's of two tokens or more (vllm bench serve's rule, and the simulation's):
    with 99 in 100 requests answered in one token and the rest in 50, TPOT p99 came out 1,638 ms, the
    life of one decode step hit by prefills, against 20 ms simulated (a fifth of batch 1's rate); until
    2026-11-27 (later), +51% (p50 -11%), the TPOT mixture read at the CSV's quantile points (one of 11
    tokens between its 1s and 50s) and not at those of its rows of two tokens or more; now -3% (p50
    +2%; seeds 1 and 2: +3% and -3%, p50 +2%): issue 22's targets."""
    from ecobench.planning.serving import at_rate

    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    traffic = Traffic(Lengths(512), Lengths.of_samples(np.array([1.0] * 99 + [50.0])))
    op = SCHEDULERS["continuous"](steps, traffic, budget=None, ttft_ok=None)
    rate = 0.2 * op.rate_per_s[0]
    got = at_rate(op, rate, 1.0, [("p50", 0.5), ("p99", 0.99)])
    sim = simulate("continuous", rate, traffic, lambda k: a + b * k, tok, req, max_batch=256, n=100_000)
    assert abs(float(got["tpot_ms_p50"]) / (1e3 * np.quantile(sim["tpot_s"], 0.5)) - 1) < 0.10
    assert abs(float(got["tpot_ms_p99"]) / (1e3 * np.quantile(sim["tpot_s"], 0.99)) - 1) < 0.20


def test_the_tpot_mixtures_quantile_is_its_cdfs():
    """The TPOT mixture's quantiles (a bracket, then Newton's method) agree with a bisection of the
    mixture's CDF to 0.1% of the TPOT at every concurrency, for long-tailed and spread outputs, Poisson,
    bursty and near-regular arrivals, with and without a budget."""
    from scipy.special import gammainc

    from ecobench.planning.tpot_dist import _gamma_mixture_quantiles

    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    qs = np.array([0.5, 0.9, 0.99])
    for traffic in (TRAFFIC["long_tail"], TRAFFIC["spread"], SMOOTH[0.01],
                    Traffic(Lengths(512), Lengths(100, 1.5), arrival_cv=1.5)):
        for budget in (2048, None):
            t = SCHEDULERS["continuous"](steps, traffic, budget=budget, ttft_ok=None).tpot
            got = _gamma_mixture_quantiles(t.extra, t.sd, qs, t.none, t.weights)
            p0 = t.none
            m = t.extra / (1 - p0)
            k = m ** 2 / np.maximum((t.sd ** 2 + t.extra ** 2) / (1 - p0) - m ** 2, 1e-60)
            for i, q in enumerate(qs):
                lo, hi = np.zeros(len(m)), np.full(len(m), 10.0)
                for _ in range(60):
                    mid = (lo + hi) / 2
                    below = (p0 + (1 - p0) * gammainc(k, mid[:, None] * k / m)) @ t.weights < q
                    lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
                np.testing.assert_allclose(t.base + got[i], t.base + lo, rtol=1e-3, err_msg=f"{q} {budget}")


def test_a_tpot_mixture_whose_zero_mass_contradicts_its_variance_is_still_bracketed():
    """At a rate so low that a prompt seldom arrives (chance of none 0.9), a point's given variance can
    be below what that zero mass implies (sd^2 < mean^2 p0 / (1 - p0)): the gamma it is read as is then
    a spike beyond the given moments' Cantelli bound, and the quantile solve indexed past its grid
    (IndexError from `ecobench run` at 50 requests/h with arrival CV 0.2, 2026-11-27). Each quantile
    is now found, to 0.5% of a bisection of the mixture's CDF (measured 0.2% at q 0.95: Newton's steps
    near a spike converge more slowly than the 0.1% of the regular mixtures above)."""
    from scipy.special import gammainc

    from ecobench.planning.tpot_dist import _gamma_mixture_quantiles

    mean, sd, none = np.array([[0.01, 0.02]]), np.array([[0.001, 0.002]]), np.array([[0.9, 0.9]])
    weights = np.array([0.5, 0.5])
    qs = np.array([0.5, 0.95, 0.99])
    got = _gamma_mixture_quantiles(mean, sd, qs, none, weights)
    m = mean / (1 - none)
    k = np.clip(m ** 2 / np.maximum((sd ** 2 + mean ** 2) / (1 - none) - m ** 2, 1e-60), 1e-3, 1e6)
    for i, q in enumerate(qs):
        lo, hi = np.zeros(1), np.full(1, 10.0)
        for _ in range(60):
            mid = (lo + hi) / 2
            below = (none + (1 - none) * gammainc(k, mid[:, None] * k / m)) @ weights < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        np.testing.assert_allclose(got[i], lo, rtol=5e-3, err_msg=str(q))


def test_the_no_arrival_exponent_is_continuous_and_falls_with_the_arrival_cv():
    """kappa = ln(c^2) / (c^2 - 1): 1 for Poisson, larger for smoother streams, unbounded at a regular one
    (the TPOT mixture caps it at 50 at its call; below c^2 = 1e-6 it once jumped from 13.8 to 50)."""
    from ecobench.planning.arrivals import no_arrival_exponent

    assert no_arrival_exponent(1.0) == 1.0 and math.isinf(no_arrival_exponent(0.0))
    grid = [1e-9, 1e-6 * (1 - 1e-9), 1e-6, 1e-6 * (1 + 1e-9), 1e-3, 0.25, 1.0, 2.25, 9.0]
    k = [no_arrival_exponent(c) for c in grid]
    assert all(a > b for a, b in zip(k, k[1:], strict=False))
    assert k[1] == pytest.approx(k[3], rel=1e-6)  # no step at 1e-6


def test_periodic_arrivals_with_outputs_of_one_length_plan_finite_latencies():
    """`ecobench run` of llama3_8b_chat with arrival_cv 0 (allowed: 0 to 10) exited 3 (TypeError in the
    report) after numpy's divide-by-zero warnings: the requests in flight had peakedness 0, which the
    concurrency chain divides by. It is read as CV 0.01's (arrivals.MIN_PEAKEDNESS)."""
    import math

    from ecobench.api import run
    from ecobench.planning.arrivals import MIN_PEAKEDNESS, peakedness

    periodic = Traffic(Lengths(1024.0), Lengths(256.0), arrival_cv=0.0)
    assert peakedness(periodic) == MIN_PEAKEDNESS
    s = {"schema_version": 2, "name": "t", "baseline": "a",
         "workload": {"model": "llama3-8b", "serving": {"requests_per_h": 36000, "input_tokens": 1024,
                                                        "output_tokens": 256, "arrival_cv": 0,
                                                        "median_tpot_ms": 50}},
         "configs": [{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16"}]}
    row = run(s).rows[0]
    assert all(math.isfinite(row[k]) for k in ("ttft_ms_p50", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p99"))


def test_a_narrow_concurrency_chain_at_a_low_rate_keeps_its_weights():
    """At near-periodic arrivals (peakedness 1e-4, arrival CV 0.01) and a rate far below the capacity,
    the chain's mass sits at n = 0 and every n >= 1 underflowed to 0: the size-biased weights were
    0 / 0, TPOT NaN, and `ecobench run` (1 request/h, arrival_cv 0.01, max_batch 1) exited 3."""
    from ecobench.planning.queueing import concurrency_seen

    mean, sd = concurrency_seen(np.array([1 / 3600, 0.5]), np.array([0.14, 0.27, 0.4]), 1e-4)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(sd))
    assert mean[0] == pytest.approx(1.0) and sd[0] == pytest.approx(0.0, abs=1e-9)
    # a wide chain is as before: the size-biased mean of the Poisson chain
    lam, cap = 0.2, np.array([0.14, 0.27, 0.4])
    pi = np.cumprod(lam / cap)
    m, _ = concurrency_seen(np.array([lam]), cap, 1.0)
    assert m[0] == pytest.approx((np.arange(1, 4) ** 2 * pi).sum() / (np.arange(1, 4) * pi).sum(), rel=1e-12)


def test_the_wait_for_a_slot_is_a_mixture_the_ttft_quantiles_solve():
    """A share of the prompts waits for a free slot instead of the prompts' queue (ttft_dist.Ttft.slot_p):
    the solved quantiles agree with a sample of that mixture to 2% (400,000 draws), and with no share
    the quantiles are those without the slot's fields."""
    r, p, wait, k, svc, q, slot, ks = 0.06, 0.6, 0.2, 0.8, 0.05, 0.03, 1.5, 1.1
    one = np.ones(1)
    d = Ttft(0 * one, r * one, p * one, wait * one, np.full((1, 1), svc), k * one,
             slot_p=q * one, slot_wait=slot * one, slot_shape=ks * one)
    rng = np.random.default_rng(0)
    n = 400_000
    queue = np.where(rng.random(n) < p, rng.gamma(k, wait / k, n), 0.0)
    waits = np.where(rng.random(n) < q, rng.gamma(ks, slot / ks, n), queue)
    sample = rng.random(n) * r + svc + waits
    qs = [0.5, 0.9, 0.99, 0.995]
    np.testing.assert_allclose(d.quantiles(qs)[:, 0], np.quantile(sample, qs), rtol=0.02)
    assert d.mean()[0] == pytest.approx(sample.mean(), rel=0.01)
    none = Ttft(0 * one, r * one, p * one, wait * one, np.full((1, 1), svc), k * one,
                slot_p=0 * one, slot_wait=slot * one, slot_shape=ks * one)
    bare = Ttft(0 * one, r * one, p * one, wait * one, np.full((1, 1), svc), k * one)
    np.testing.assert_array_equal(none.quantiles(qs), bare.quantiles(qs))


# Static batches below batch 1's rate (a replica idle between requests) reported batch 1's latencies
# until 2026-11-29: only the continuous scheduler had rows below concurrency 1 (Operating.light). A
# request that finds the replica idle starts a batch of its own at once (simulate._static, and an engine's
# static batcher, which runs what waits whenever it is free); the others wait out the cycle they arrive in
# and their batch's prefill. Against 100,000 simulated requests (seed 0; the test's steps, outputs of 100
# unless named), model / simulated TTFT p50 and p99, before -> after, at 5%, 20% and 50% of batch 1's rate:
# * fixed lengths: p50 +795% at each -> +0%; p99 +34%, +13%, +6% -> +0%, +0%, -1%;
# * spread lengths (CV 0.5): p50 +980%, +857%, +507% -> +1%, -1%, -2% (who runs alone is prefilled at
#   its own prompt's length: with the mean length's prefill, +6%, -6%, -40%); p99 +130%, +48%, +19% ->
#   +0%, -0%, -0%;
# * bursty arrivals (CV 1.5): p50 +673%, +673%, +12% -> +0%, +0%, -40%; p99 +10%, +5%, -1% -> -6%, -6%,
#   -6%. Under bursts a request arrives during the cycle before more often than the stationary count of
#   arrivals says (the gap after the request that started it is a gamma of CV 1.5: P(G < c) 0.21 at 5%
#   load, the simulation's share that waits 0.21): schedulers._after_idle (with the stationary count
#   only, 0.05 waited and TTFT p99 was -21% at 5%). At 50% the median sits where the share that waits
#   (0.60 simulated, 0.53 modelled) crosses one half: TTFT p50 -40% (seeds 1 and 2: -41%);
# * long-tailed outputs (CV 1.5): p50 +1976% -> +3%; p99 +276%, +80%, +29% -> -2%, -6%, -6%;
# * outputs of 5: p50 +237% -> +0%; p99 +248%, +153%, +66% -> +0%, -13%, -22% (seeds 1 and 2: -14%,
#   -13% at 20%, -22%, -18% at 50%): a short cycle's length is mostly its batch's prefill, and a batch of
#   two or three is a whole prompt or two longer than the gamma of the cycle's spread has it.
# Lighter still, where a plan with a TTFT p99 target of a few seconds lands for long outputs (prompts of
# 1,024 tokens, outputs of 256, 400,000 requests): at 1/64, 1/32 and 1/16 of a request in flight TTFT p99
# -2%, -0%, -0% (Poisson) and -8%, -6%, -5% (arrival CV 1.5); p50 the own prefill (+0.4%: the solve's step).
# TPOT within 7% everywhere (before: up to +21%). The cycle's gamma once kept its scale where its shape
# was capped (1e6: a cycle that barely varies, batches of one at a light load), so the cycle a request
# arrived in came out a millionth of a cycle: test_static_wait_below_batch_1s_rate_is_a_share_of_the_cycle.
def test_static_tpot_at_a_binding_slot_limit_is_the_batch_chains():
    """16 slots at rows 12 and 13 (near 90% of the top rate): a static request's TPOT is its batch's
    decode step, and the batch sizes near the limit are the chain's (static_chain.py), not a normal of
    the moment recursion's mean and variance. Model / simulated within 2% at p50, p90 and p99 (measured
    at most 0.9%; before, long-tailed outputs +19%, +46%, +68% and bursts up to +24%)."""
    a, b, tok, req = REPLICA
    batch = np.arange(1, 17)
    for traffic in (TRAFFIC["long_tail"], TRAFFIC["bursty"]):
        op = SCHEDULERS["static"](Steps(batch, a + b * batch, tok, req), traffic, budget=None, ttft_ok=None)
        for i in (11, 12):
            sim = simulate("static", op.rate_per_s[i], traffic, lambda k: a + b * k, tok, req, max_batch=16,
                           n=200_000)
            for q in (0.5, 0.9, 0.99):
                got = float(op.latency_at("tpot", q, np.array([i]))[0])
                assert got == pytest.approx(1e3 * np.quantile(sim["tpot_s"], q), rel=0.02), (i, q)


# A queue several full batches long: 16 slots at rows 12 and 13 (13 and 14 requests in flight, 90-95% of
# the top rate; long-tailed outputs' rows 12 and 13 are 93% and 95%). A request that arrives behind k full
# batches waits k whole cycles of a full batch. Until 2026-11-29 (later) the chain of batch sizes kept one
# batch left over (16 states past the limit, the last holding all beyond) and a share waiting one more
# cycle: TTFT p50 -3% to -46%, p99 +2% to -70% at these rows against 1,000,000 simulated requests (seeds 0
# and 1; every traffic fails there before; the table is in docs/serving.md). Now it keeps
# up to 80 states past the limit (static_chain.left_grid: evenly spaced at half the SD of a full cycle's
# arrivals, reaching 8 of the queue's tail scales) and reads how many whole full cycles a request waits
# (static_chain._ahead), as a gamma of that many cycles' mean and variance (Ttft.p, wait and shape).
# Those who wait arrived late in their cycle (the N before them fill a batch), so they wait out the start
# of its rest only (static_chain._late, Ttft.wait_rest): until 2026-11-29 (later still) the rest and the
# whole cycles were taken as independent, and fixed lengths at row 11 (86% load) came out TTFT p99 +25%
# (seed 1: +22%), now +3% (+1%); row 12 +14% (+12%), now -0% (-2%) (docs/serving.md).
def _static_16_slots(traffic, i, n=1_000_000):
    """Model / simulated - 1 of TTFT and TPOT p50 and p99 at row ``i`` of 16 slots (seed 0)."""
    a, b, tok, req = REPLICA
    batch = np.arange(1, 17)
    op = SCHEDULERS["static"](Steps(batch, a + b * batch, tok, req), traffic, budget=None, ttft_ok=None)
    sim = simulate("static", op.rate_per_s[i], traffic, lambda k: a + b * k, tok, req, max_batch=16, n=n)
    err = {}
    for metric in ("ttft", "tpot"):
        for q in (0.5, 0.99):
            got = float(op.latency_at(metric, q, np.array([i]))[0])
            err[f"{metric}_p{round(q * 100)}"] = got / (1e3 * np.quantile(sim[f"{metric}_s"], q)) - 1
    return err


@pytest.mark.slow
@pytest.mark.parametrize("traffic", ["fixed", "spread", "bursty", "long_tail"])
@pytest.mark.parametrize("i", [11, 12, 13])
def test_static_ttft_behind_full_batches_at_a_binding_slot_limit(traffic, i):
    """TTFT and TPOT at 16 slots where the queue is one or several full batches long: issue 22's
    targets against 1,000,000 simulated requests (seed 0)."""
    _check(_static_16_slots(TRAFFIC[traffic], i))


def test_static_requests_that_wait_whole_cycles_arrived_late_in_theirs():
    """Fixed lengths at 16 slots, row 11 (86% load): few wait a whole cycle, and those arrived late in
    theirs; TTFT p99 within issue 22's 20% (+25% when the rest of their cycle was the whole's)."""
    _check(_static_16_slots(TRAFFIC["fixed"], 11))


def test_the_rest_of_the_cycle_of_those_who_wait_is_its_start():
    """Ttft.wait_rest: the CDF of the mixture it describes (those who wait: Uniform(0, b r) and the
    gamma; the others: Uniform(a r, r), ``a = p (1 - b) / (1 - p)``) against 400,000 draws of it, within
    0.003 at its 2nd to 99.9th percentiles, the same mean; at ``b = 1`` the CDF without it."""
    rng = np.random.default_rng(0)
    r, service = np.array([[0.2, 0.5, 1.0, 2.0]]), np.array([[0.05, 0.1, 0.1, 0.3]])
    p, wait, shape, b = 0.3, 1.5, 4.0, 0.4
    d = Ttft(np.array([0.01]), r, np.array([p]), np.array([wait]), service, np.array([shape]),
             wait_rest=np.array([b]))
    n = 400_000
    j, waits, u = rng.integers(0, 4, n), rng.random(n) < p, rng.random(n)
    a = p * (1 - b) / (1 - p)
    rest = np.where(waits, u * b, a + u * (1 - a)) * r[0, j]
    t = 0.01 + service[0, j] + rest + np.where(waits, rng.gamma(shape, wait / shape, n), 0.0)
    qs = np.array([0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999])
    for q in qs:
        assert d.cdf(np.array([np.quantile(t, q)]))[0] == pytest.approx(q, abs=0.003), q
    assert d.mean()[0] == pytest.approx(t.mean(), rel=0.003)
    whole = Ttft(d.fixed, r, d.p, d.wait, service, d.shape)
    at = np.array([0.3, 1.0, 2.5])
    got = [dataclasses.replace(d, wait_rest=np.array([1.0])).cdf(np.array([x]))[0] for x in at]
    np.testing.assert_allclose(got, [whole.cdf(np.array([x]))[0] for x in at], atol=1e-12)


STATIC_LIGHT_GAPS = {("bursty", 0.5): "TTFT p50 -40%", ("out5", 0.5): "TTFT p99 -22%"}
LIGHT_TRAFFIC = {**TRAFFIC, "out5": Traffic(Lengths(512), Lengths(5))}


@pytest.mark.parametrize("traffic", list(LIGHT_TRAFFIC))
@pytest.mark.parametrize("share", [0.05, 0.2, 0.5])
def test_static_latencies_below_batch_1s_rate_are_those_of_the_rate(traffic, share, request):
    from ecobench.planning.serving import at_rate

    if gap := STATIC_LIGHT_GAPS.get((traffic, share)):
        request.applymarker(pytest.mark.xfail(reason=f"a known gap below batch 1: {gap}", strict=True))
    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    tr = LIGHT_TRAFFIC[traffic]
    op = SCHEDULERS["static"](steps, tr, budget=None, ttft_ok=None)
    rate = share * op.rate_per_s[0]
    got = at_rate(op, rate, 1.0, [("p50", 0.5), ("p99", 0.99)])
    sim = simulate("static", rate, tr, lambda k: a + b * k, tok, req, max_batch=256, n=100_000)
    for metric in ("ttft", "tpot"):
        for q, limit in ((0.5, 0.10), (0.99, 0.20)):  # issue 22's targets
            want = 1e3 * np.quantile(sim[f"{metric}_s"], q)
            model = float(got[f"{metric}_ms_p{round(q * 100)}"])
            assert abs(model / want - 1) < limit, (metric, q, got, want)
    assert float(got["batch"]) == 1.0  # the reported concurrency stays batch 1's (its capacity's)


def test_static_wait_below_batch_1s_rate_is_a_share_of_the_cycle():
    """Prompts of 1,024 tokens, outputs of 256: the mean TTFT beyond a request's own prefill (the wait of
    the few that arrive during a cycle) at 1/128, 1/45 and 1/16 of a request in flight within 10% of
    400,000 simulated requests (measured -0.8%, +0.4%, -0.3%; seed 1: -0.3%, -0.6%, -0.7%; a millionth
    of it where the capped gamma lost the cycle). 100,000 requests leave too few waiting at 1/128: +11%."""
    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    tr = Traffic(Lengths(1024), Lengths(256))
    light = SCHEDULERS["static"](steps, tr, budget=None, ttft_ok=None).light()
    own = tok * 1024 + req
    for i in (6, 9, 12):
        sim = simulate("static", light.rate_per_s[i], tr, lambda k: a + b * k, tok, req, max_batch=256,
                       n=400_000)
        model = float(light.ttft_rows(np.array([i])).mean()[0]) - own
        want = float(sim["ttft_s"].mean()) - own
        assert abs(model / want - 1) < 0.10, (light.batch[i], model, want)


# The disaggregated prefill pool at low loads (a plan reads its TTFT at the load the pool runs at since
# 2026-11-29: serving.prefill_pool_columns; before, at the highest load meeting the targets, 0.98 without
# any). Model / simulated at pool loads 0.05, 0.2, 0.5 (100,000 requests, seed 0): TTFT p50 +0.1%, +0.1%,
# -0.8% (fixed), +2.6%, +2.0%, +1.0% (spread), +0.2%, +0.2%, -6.8% (bursty), +0.1%, +0.1%, -0.8% (long
# tail); p99 -3.1%, +1.1%, -3.3%; -3.9%, +0.5%, -2.2%; +5.1%, +0.4%, -3.3%; -3.1%, +1.1%, -3.3%. What
# a plan reported before, the pool at 0.98, against those simulated loads: see
# test_a_disaggregated_plan_reads_ttft_at_its_prefill_pools_load.
@pytest.mark.parametrize("traffic", list(TRAFFIC))
@pytest.mark.parametrize("load", [0.05, 0.2, 0.5])
def test_the_prefill_pool_agrees_with_the_simulation_at_low_loads(traffic, load):
    _check(_compare("disaggregated", None, TRAFFIC[traffic], load, n=100_000))


def test_a_disaggregated_plan_reads_ttft_at_its_prefill_pools_load():
    """serving.prefill_pool_columns gives the pool's quantiles at the load given, not at the planned
    (highest) load the scheduler's rows carry: at load 0.05 the TTFT p50 is a prompt's prefill, where
    the rows' (0.98, no targets) is many prefills."""
    from ecobench.planning.serving import prefill_pool_columns

    a, b, tok, req = REPLICA
    steps = Steps(BATCH, a + b * BATCH, tok, req)
    op = SCHEDULERS["disaggregated"](steps, TRAFFIC["fixed"], budget=None, ttft_ok=None)
    stats = [("mean", "mean"), ("p50", 0.5), ("p99", 0.99)]
    got = prefill_pool_columns(op, 0.05, stats)
    want = prefill_pool_ttft(steps, TRAFFIC["fixed"], np.array([0.05]))
    assert got["ttft_ms_p50"] == pytest.approx(1e3 * float(want.quantile(0.5)[0]))
    assert got["ttft_ms_mean"] == pytest.approx(1e3 * float(want.mean()[0]))
    assert got["ttft_ms_p50"] < 0.2 * float(op.latency_ms("ttft", 0.5)[0])
    prefill = tok * 512 + req
    sim = simulate("disaggregated", 0.05 / prefill, TRAFFIC["fixed"], lambda k: a + b * k, tok, req,
                   max_batch=256, n=20_000)
    assert got["ttft_ms_p50"] == pytest.approx(1e3 * np.quantile(sim["ttft_s"], 0.5), rel=0.10)
    assert prefill_pool_columns(SCHEDULERS["static"](steps, TRAFFIC["fixed"], budget=None), 0.05, stats) == {}


def test_the_static_chains_count_is_the_negative_binomials():
    """static_chain.count_cdf: scipy's negative binomial and Poisson CDFs to 1e-6 (a Poisson count is a
    negative binomial of shape 1e6 there, as in schedulers._batch_mass) up to its EXACT_COUNT, and
    within 0.01 beyond (Wilson and Hilferty's gamma), at means of 0.5 to 300."""
    from scipy.stats import nbinom, poisson

    from ecobench.planning.static_chain import EXACT_COUNT, count_cdf

    at = np.arange(0, 700, 7)[None, :]
    for mean, var in ((0.5, 0.5), (3.0, 12.0), (40.0, 40.0), (300.0, 5000.0)):
        got = count_cdf(np.array([mean]), np.array([var]), at)[0]
        if var > mean:
            r = mean * mean / (var - mean)
            want = nbinom.cdf(at[0], r, r / (r + mean))
        else:
            want = poisson.cdf(at[0], mean)
        small = at[0] < EXACT_COUNT
        np.testing.assert_allclose(got[small], want[small], atol=1e-6, err_msg=str(mean))
        np.testing.assert_allclose(got[~small], want[~small], atol=0.01, err_msg=str(mean))
