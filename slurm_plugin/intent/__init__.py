"""Intent: what a user wants ("train on 4 GPUs, any type, finish by Friday 18:00, cheapest") turned into sbatch
directives, a begin time and deadline, accelerator alternatives and a cost bound, checked before submission.

:mod:`.grammar` parses (errors name the column), :mod:`.resolve` checks the intent against the site and the
cost plan and derives the directives (or refuses with the reason).
"""
