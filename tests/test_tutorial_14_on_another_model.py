"""Tutorial 14 on a learner's own model, in English, with a planted key: one run, every promise checked.

AGENTKIT_BASE_URL and AGENTKIT_MODEL name the stand-in (the openai-chat format, as an OpenAI-compatible server
of one's own). The attacks and the defences run on the simulator's sim-gullible by name (a model fooled on
purpose, by construction); Part 8 runs the four attacks on the configured model, with no defence and with all
of them. Those eight runs start, in turn, with a mistake, with no call and with one call, so they meet every
way the stand-in answers. The checks every tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from tutorial_runs import EveryTutorialPromise, Tutorial, count, tutorial_run

run = tutorial_run(Tutorial("14_untrusted_tool_results.ipynb"))


class TestTutorial14(EveryTutorialPromise):
    def test_part_8_reports_each_attack_on_the_configured_model_under_both_defences(self, run):
        assert count(r"(none|all of them) +(direct|hidden in data|the user's secrets|ignore a limit) +attack succeeded",
                     run.outputs) == 8
        assert "measured (your model, learner-7b)" in run.outputs
