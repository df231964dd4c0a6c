"""Compare the Python CEL packages on a typical DRA selector (docs/dra.md, "CEL").

Each package compiles and evaluates

    device.driver == "gpu.example.com" &&
    device.attributes["gpu.example.com"].memory.compareTo(quantity("16Gi")) >= 0

with ``quantity``/``compareTo`` supplied as custom functions, on a device with 13 attributes
(like scheduler_perf's test driver). "cold" converts the device to the package's input on
every evaluation; "warm" converts it once and reuses it. The last line is our own
``scheduler.model.dra_cel`` (cel-expr-python plus the Kubernetes libraries), end to end.

Run in a scratch virtualenv that has the three packages (they are not project dependencies,
except cel-expr-python)::

    python -m venv /tmp/cel && /tmp/cel/bin/pip install cel-python \\
        common-expression-language cel-expr-python cachetools structlog numpy
    PYTHONPATH=. /tmp/cel/bin/python bench/dra_cel_compare.py

A package that is missing is reported and skipped.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

EXPR = (
    'device.driver == "gpu.example.com" && '
    'device.attributes["gpu.example.com"].memory.compareTo(quantity("16Gi")) >= 0'
)
GI = 2**30
COMPILES, EVALS = 200, 3000


def attributes(memory: Any) -> dict[str, Any]:
    values: dict[str, Any] = {f"attr{i}": i for i in range(12)}
    values["memory"] = memory
    return values


def report(name: str, compile_fn: Callable[[], Any], eval_fn: Callable[[Any], Any]) -> None:
    compile_s = timeit.timeit(compile_fn, number=COMPILES) / COMPILES
    program = compile_fn()
    assert eval_fn(program) in (True, 1)
    eval_s = timeit.timeit(lambda: eval_fn(program), number=EVALS) / EVALS
    print(f"{name:48s} compile {compile_s * 1e3:7.3f} ms   evaluate {eval_s * 1e6:8.1f} us")


def bench_celpy() -> None:
    import celpy
    import celpy.celtypes as ct

    env = celpy.Environment()
    functions = {"quantity": lambda s: ct.IntType(16 * GI),
                 "compareTo": lambda a, b: ct.IntType((a > b) - (a < b))}
    device = celpy.json_to_cel({"driver": "gpu.example.com",
                                "attributes": {"gpu.example.com": attributes(32 * GI)}})
    report("cel-python (celpy), warm",
           lambda: env.program(env.compile(EXPR), functions=functions),
           lambda p: bool(p.evaluate({"device": device})))


def bench_rust() -> None:
    import cel

    functions = {"quantity": lambda s: 16 * GI, "compareTo": lambda a, b: (a > b) - (a < b)}
    device = {"driver": "gpu.example.com", "attributes": {"gpu.example.com": attributes(32 * GI)}}
    report("common-expression-language, cold", lambda: cel.compile(EXPR),
           lambda p: p.execute(cel.Context({"device": device}, functions)))
    context = cel.Context({"device": device}, functions)
    report("common-expression-language, warm", lambda: cel.compile(EXPR),
           lambda p: p.execute(context))


def bench_cpp() -> None:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_optional

    t = cel.Type
    qt = t.Map(t.STRING, t.INT)
    functions = [
        cel.FunctionDecl("quantity", [cel.Overload(
            "quantity_string", return_type=qt, parameters=[t.STRING],
            impl=lambda s: {"m": 16 * GI * 1000})]),
        cel.FunctionDecl("compareTo", [cel.Overload(
            "q_compareTo_q", return_type=t.INT, parameters=[qt, qt], is_member=True,
            impl=lambda a, b: (a["m"] > b["m"]) - (a["m"] < b["m"]))]),
    ]
    env = cel.NewEnv(variables={"device": t.DYN}, functions=functions,
                     extensions=[ext_optional.ExtOptional()])
    data = {"device": {"driver": "gpu.example.com",
                       "attributes": {"gpu.example.com": attributes({"m": 32 * GI * 1000})}}}
    report("cel-expr-python, cold", lambda: env.compile(EXPR),
           lambda p: p.eval(data=data).value())
    activation = env.Activation(data=data)
    report("cel-expr-python, warm", lambda: env.compile(EXPR),
           lambda p: p.eval(activation).value())


def bench_ours() -> None:
    from scheduler.model.dra import Device, DeviceAttribute, DeviceCapacity
    from scheduler.model.dra_cel import compile_selector

    attrs = {f"attr{i}": DeviceAttribute("int", i) for i in range(12)}
    device = Device("gpu-0", attrs, {"memory": DeviceCapacity(32 * GI * 10**9)})
    cel_input = device.cel_input("gpu.example.com")
    expression = EXPR.replace('attributes["gpu.example.com"].memory',
                              'capacity["gpu.example.com"].memory')
    report("scheduler.model.dra_cel (capacity, quantity)",
           lambda: compile_selector(expression), lambda p: p.matches(cel_input))


def main() -> None:
    for bench in (bench_celpy, bench_rust, bench_cpp, bench_ours):
        try:
            bench()
        except ImportError as err:
            print(f"{bench.__name__}: skipped ({err})")
        except Exception as err:  # a package that cannot express the selector
            print(f"{bench.__name__}: failed ({type(err).__name__}: {err})")


if __name__ == "__main__":
    main()
