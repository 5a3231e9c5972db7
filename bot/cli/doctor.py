"""`pt2-triage doctor`: check that this machine can serve as a triage runner, and say what is missing."""
from __future__ import annotations

import argparse
import json
import sys

from bot.cli.doctor_checks import diagnose, healthy
from bot.core.render import render


def register(commands, add_command) -> None:
    """Called at the end of `bot.cli.main.build_parser`."""
    doctor = add_command(commands, "doctor", cmd_doctor,
                         "check this runner: python, torch, CUDA, C++ compiler, network isolation, disk, tlparse",
                         "print the facts and checks as JSON")
    doctor.add_argument("--gpu", action="store_true", help="this is a gpu runner: CUDA and Triton are required")
    doctor.add_argument("--python", default=sys.executable, help="the interpreter repros will run with")
    doctor.add_argument("--disk-path", help="where runs keep workdirs and caches (default the temp dir)")


def cmd_doctor(args: argparse.Namespace) -> int:
    """Exit 0 when every check passes or only warns, 1 when the runner cannot do the job."""
    from runners.doctor_probe import runner_facts

    facts = runner_facts(args.python, args.disk_path)
    checks = diagnose(facts, need_gpu=args.gpu)
    if args.json:
        print(json.dumps({"healthy": healthy(checks), "checks": [c.to_dict() for c in checks], "facts": facts}, indent=2))
    else:
        print(render("doctor.txt.j2", checks=checks, healthy=healthy(checks), gpu=args.gpu), end="")
    return 0 if healthy(checks) else 1
