"""The intent grammar (parse, errors with the column) and what an intent becomes on the demo site."""

from __future__ import annotations

import datetime as dt

import pytest

from slurm_plugin.intent.grammar import IntentSyntaxError, parse_intent
from slurm_plugin.intent.resolve import IntentRefused, resolve
from slurm_plugin.site import load_site, resolve_site_path

NOW = dt.datetime(2026, 12, 1, 16, 0, tzinfo=dt.timezone.utc)  # a Tuesday


@pytest.fixture(scope="module")
def site():
    return load_site(resolve_site_path("demo"))


def test_the_two_examples_parse():
    a = parse_intent("train on 4 GPUs, any type, finish by Friday 18:00, cheapest")
    assert (a.verb, a.amount, a.resource, a.any_type, a.goal) == ("train", 4, "gpu", True, "cheapest")
    assert (a.finish_by.day, a.finish_by.time) == (4, "18:00")
    b = parse_intent("render 500 frames this weekend under 200 EUR")
    assert (b.verb, b.items, b.item_word, b.window, b.budget, b.currency) == ("render", 500, "frames", "weekend",
                                                                              200.0, "EUR")


@pytest.mark.parametrize("text,column,words", [
    ("train on four GPUs", 10, "a number"),
    ("render 500 frames under 200", 28, "currency"),
    ("train, finish by Friday 25:00", 25, "23:59"),
    ("train on 4 GPUs cheapest cheapest", 26, "goal given twice"),
    ("train % 3", 7, "unexpected character"),
    ("train, by", 10, "expected a time"),
    ("train 3 hours", 14, "'each'"),
    ("", 1, "expected a clause"),
])
def test_parse_errors_name_the_column(text, column, words):
    with pytest.raises(IntentSyntaxError) as err:
        parse_intent(text)
    assert err.value.column == column and words in err.value.message, str(err.value)
    assert f"column {column}" in str(err.value)


def test_training_intent_becomes_directives(site):
    d = resolve(parse_intent("train on 4 GPUs, any type, finish by Friday 18:00, cheapest"), site, NOW)
    assert d.workload_class == "ai-training"
    # h100 does the work at 22 EUR/h x speed 2 = 11 per unit, a100 at 12: cheapest first
    assert d.options == ("--comment=class=ai-training", "--gpus=4", "--nodes=1", "--constraint=h100|a100",
                         "--deadline=2026-12-04T18:00:00", "--time=3-02:00:00")


def test_weekend_render_under_a_budget(site):
    d = resolve(parse_intent("render 500 frames at 2 min each this weekend under 200 EUR"), site, NOW)
    assert "--array=1-500" in d.options and "--begin=2026-12-05T00:00:00" in d.options
    assert "--deadline=2026-12-07T00:00:00" in d.options and "--time=00:02:00" in d.options
    assert d.estimate <= 200 and d.budget == 200
    # no duration: the time limit is what the budget pays for
    e = resolve(parse_intent("render 500 frames this weekend under 2 EUR"), site, NOW)
    assert e.estimate <= 2 and 0 < e.time_limit_s < 48 * 3600


@pytest.mark.parametrize("text,reason", [
    ("render 500 frames at 3 hours each this weekend under 10 EUR", "over the bound 10 EUR"),
    ("train on 4 GPUs for 3 days, finish by tomorrow 10:00", "cannot finish by"),
    ("train on 4 GPUs, v100", "no node group with v100"),
    ("train on 64 GPUs", "no node group has 64 GPUs"),
    ("train on 4 GPUs for 1 hour under 5 USD", "budget is in USD"),
    ("train, finish by 2026-11-30 12:00", "has passed"),
])
def test_impossible_intents_are_refused_with_the_reason(site, text, reason):
    with pytest.raises(IntentRefused, match=reason):
        resolve(parse_intent(text), site, NOW)


def test_refused_when_the_cost_plan_keeps_the_groups_off(site):
    intent = parse_intent("train on 4 GPUs, a100, for 2 hours, finish by today 20:00")
    plan = {"start": NOW.isoformat(), "hour_s": 3600, "power": {"gpu-a100": [0, 0, 1, 0]}}
    with pytest.raises(IntentRefused, match="cost plan keeps gpu-a100 off"):
        resolve(intent, site, NOW, plan=plan)
    plan["power"]["gpu-a100"] = [0, 1, 1, 0]
    assert resolve(intent, site, NOW, plan=plan).groups == ("gpu-a100",)
