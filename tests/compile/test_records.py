# ruff: noqa: E501  (torch's messages below are kept as it prints them, long lines and all)
"""What torch.compile says, parsed (no torch needed): the messages below are torch 2.13's
own, as its structured trace and ``TORCH_LOGS`` print them."""

from __future__ import annotations

import json

from dyngraph.compile_lane import records
from dyngraph.compile_lane.records import Assembler, Fact

BREAK = """Graph break in user code at /w/demo.py:52
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.
  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.

  Developer debug context: call_method TensorVariable() item () {}

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html

User code traceback:
  File "/w/demo.py", line 88, in main
    loss = step(model, x, y)
  File "/w/demo.py", line 52, in train_step
    if loss.item() > 1.0:
       ^^^^^^^^^^^^^

Traceback (most recent call last):
  File "/venv/torch/_dynamo/symbolic_convert.py", line 1076, in wrapper
    return inner_fn(self, inst)
"""

DUPLICATE = ("Graph break (user stack suppressed due to duplicate graph break) in user code "
             "at /w/demo.py:52\nGraph Break Reason: Encountered graph break when attempting "
             "to trace CALL: a function call, e.g. f(x, y):\n\nUnsupported Tensor.item() call"
             " with capture_scalar_outputs=False\n  Explanation: Dynamo does not support it.\n")

GUARDS = """
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # _dynamo/output_graph.py:1135 in init_ambient_guards
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, size=[4, 5, 3], stride=[15, 3, 1])  # h = torch.zeros(x.shape[0], HIDDEN)  # /demo.py:37 in forward
| +- GuardManager: source=G['torch'], accessed_by=DictGetItemGuardAccessor('torch'), type=<class 'module'>, tag_safe=(False, False)
| | +- ID_MATCH: ___check_obj_id(G['torch'], 139688235205952), type=<class 'module'>  # h = torch.zeros(x.shape[0], HIDDEN)  # /demo.py:37 in forward

Guard latency = 67.47 us"""

RESUME_REASON = ("1/0: ___stack0 == 0.16469410061836243                         # if y.item() "
                 "> 0:  # o.py:21 in torch_dynamo_resume_in_step_at_21\nUser stack trace:\n"
                 '  File "/w/demo.py", line 21, in torch_dynamo_resume_in_step_at_21\n'
                 "    if y.item() > 0:")

LIMIT = ("torch._dynamo hit config.recompile_limit (2)\n   function: 'step' (/w/demo.py:16)\n"
         "   last reason: 0/1: tensor 'x' size mismatch at index 1. expected 7, actual 9\n"
         'To log all recompilation reasons, use TORCH_LOGS="recompiles".\n')


def test_a_graph_break_message_gives_its_line_type_reason_hints_and_user_stack():
    b = records.parse_break(BREAK)
    assert (b.file, b.line) == ("/w/demo.py", 52)
    assert b.type == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert b.reason.startswith("Dynamo does not support tracing `Tensor.item()`")
    assert b.hints.splitlines()[0].startswith("Set `torch._dynamo.config.capture_scalar")
    assert b.hints.splitlines()[1].startswith("For more details")
    # the user's frames only, outermost first: not Dynamo's own traceback after them
    assert b.stack == "/w/demo.py:88 in main\n/w/demo.py:52 in train_step"
    again = records.parse_break(DUPLICATE)
    assert (again.file, again.line, again.type, again.stack) == (
        "/w/demo.py", 52, b.type, "")
    assert records.parse_break("Recompiling function f in a.py:3") is None


def test_recompile_reasons_give_each_failed_guard_and_the_input_it_names():
    listed = ["0/1: tensor 'x' size mismatch at index 1. expected 7, actual 9",
              "0/0: tensor 'x' size mismatch at index 1. expected 5, actual 9"]
    # (how trace_structured writes a list payload)
    reasons = records.reasons_payload("[\n" + ",\n".join(map(json.dumps, listed)) + "\n]")
    assert reasons == listed
    failures = records.failed_guards(reasons)
    assert [i for i, _ in failures] == ["0/1", "0/0"]
    assert records.guard_input(failures[0][1]) == "x"
    single = records.failed_guards(records.reasons_payload(RESUME_REASON))
    assert [i for i, _ in single] == ["1/0"]  # (the user stack after it is not a guard)
    assert records.clean_guard(single[0][1]) == "___stack0 == 0.16469410061836243"
    assert records.guard_input(single[0][1]) == "___stack0"
    assert records.guard_input("L['inputs'][0].size()[1] == 7") == "inputs"
    assert records.guard_origin(single[0][1]) == (
        "o.py", 21, "torch_dynamo_resume_in_step_at_21")


def test_a_guard_is_traced_to_the_line_that_made_it_through_the_entry_s_guards():
    guards = records.condense_guards(GUARDS)
    assert records.guard_origin("tensor 'x' size mismatch at index 1", guards, "x") == (
        "/demo.py", 37, "forward")
    assert records.guard_origin("tensor 'y' size mismatch", guards, "y") == ("", 0, "")


def test_guard_sets_keep_one_guard_a_line_without_accessors_or_object_ids():
    lines = records.condense_guards(GUARDS).splitlines()
    assert [line.split(":")[0] for line in lines] == ["LAMBDA_GUARD", "TENSOR_MATCH", "ID_MATCH"]
    assert "139688235205952" not in lines[2] and "___check_obj_id(G['torch'], …)" in lines[2]


def test_the_recompile_limit_warning_names_the_function_and_its_last_reason():
    limit = records.parse_limit(LIMIT)
    assert limit == records.Limit("recompile_limit", 2, "step", "/w/demo.py", 16,
                                  "0/1: tensor 'x' size mismatch at index 1. expected 7, "
                                  "actual 9")


def structured(emit) -> Assembler:
    """An assembler fed the records of one run of a function that recompiles once."""
    a = Assembler(emit, internal=lambda f: f.startswith("/lib/"))
    a.record("str", {"str": ("/w/demo.py", 1)}, "")
    a.record("str", {"str": ("/lib/launch.py", 2)}, "")
    start = {"stack": [{"line": 3, "name": "<module>", "filename": 2},
                       {"line": 16, "name": "step", "filename": 1}]}
    a.record("dynamo_start", {"dynamo_start": start, "frame_id": 0, "frame_compile_id": 0}, "")
    a.record("artifact", {"artifact": {"name": "dynamo_graph_break_reason"}, "frame_id": 0,
                          "frame_compile_id": 0}, BREAK)
    a.record("dynamo_cpp_guards_str", {"frame_id": 0, "frame_compile_id": 0},
             GUARDS.replace("/demo.py", "mo.py"))
    a.record("compilation_metrics", {"compilation_metrics": {
        "compile_id": "0/0", "co_name": "step", "co_filename": "/w/demo.py",
        "co_firstlineno": 16, "duration_us": 1500, "guard_count": 3}}, "")
    a.record("artifact", {"artifact": {"name": "recompile_reasons"}, "frame_id": 0,
                          "frame_compile_id": 1},
             "0/0: tensor 'x' size mismatch at index 1. expected 5, actual 7")
    a.record("dynamo_start", {"dynamo_start": start, "frame_id": 0, "frame_compile_id": 1}, "")
    a.record("compilation_metrics", {"compilation_metrics": {
        "compile_id": "0/1", "fail_type": "Unsupported",
        "fail_reason": "Dynamo recompile limit exceeded\n  Explanation: ... (currently set "
                       "to 1)."}}, "")
    return a


def test_structured_records_become_facts_in_order_with_their_frames():
    facts: list[Fact] = []
    structured(facts.append)
    assert [(f.what, f.compile_id) for f in facts] == [
        ("start", "0/0"), ("break", "0/0"), ("guards", "0/0"), ("end", "0/0"),
        ("recompile", "0/1"), ("start", "0/1"), ("end", "0/1"), ("limit", "0/1")]
    start, brk, guards, end, recompile = facts[:5]
    assert (start.frame, start.file, start.line) == ("step", "/w/demo.py", 16)
    assert start.stack == "/w/demo.py:16 in step"  # (library frames left out)
    assert (brk.frame, brk.line, brk.type) == ("step", 52, records.parse_break(BREAK).type)
    assert guards.reason == "3 guards" and end.duration_ns == 1_500_000
    # the guard's file, cut short by torch ("mo.py"), is the frame's own file in full
    assert (recompile.frame, recompile.input, recompile.stack) == (
        "step", "x", "/w/demo.py:37 in forward")
    assert recompile.reason == "tensor 'x' size mismatch at index 1. expected 5, actual 7"
    assert "(1)" in facts[-1].reason and "runs eagerly" in facts[-1].reason


def test_the_text_fallback_gives_the_same_facts_once_the_metrics_name_the_frames():
    facts: list[Fact] = []
    a = Assembler(facts.append)
    a.timing("start", "0/0", "dynamo", 0)
    a.text("graph_breaks", BREAK, "0/0")
    a.timing("end", "0/0", "dynamo", 2_000)
    a.timing("end", "0/0", "lazy_backward", 9_000)  # a backend's backward: not a compile
    message = ("Recompiling function step in /w/demo.py:16\n    triggered by the following "
               "guard failure(s):\n    - 0/0: tensor 'x' size mismatch at index 1. expected "
               "5, actual 7")
    a.text("recompiles", message, "0/1")
    assert facts == []  # nothing until the metrics name the frames
    metrics = [{"compile_id": "0/0", "co_name": "step", "co_filename": "/w/demo.py",
                "co_firstlineno": 16},
               {"compile_id": "0/0", "co_name": None}]  # (a backward's entry)
    a.flush(metrics)
    assert [(f.what, f.compile_id, f.frame, f.line) for f in facts] == [
        ("start", "0/0", "step", 16), ("break", "0/0", "step", 52), ("end", "0/0", "step", 16)]
    a.timing("end", "0/1", "dynamo", 1_000)
    a.flush(metrics)
    assert [(f.what, f.frame, f.input) for f in facts[3:]] == [
        ("start", "step", ""), ("recompile", "step", "x"), ("end", "step", "")]
    a.text("limit", LIMIT, "")
    assert facts[-1].what == "limit" and facts[-1].detail.startswith("0/1: tensor 'x'")


def test_file_names_interned_before_the_lane_listened_are_looked_up():
    facts: list[Fact] = []
    # (an earlier compile in the process interned the file: its "str" record went by)
    a = Assembler(facts.append, interned=lambda: {1: "/w/demo.py"})
    a.record("dynamo_start", {"dynamo_start": {"stack": [
        {"line": 16, "name": "step", "filename": 1}]}, "frame_id": 3, "frame_compile_id": 0},
        "")
    assert (facts[0].file, facts[0].line, facts[0].stack) == (
        "/w/demo.py", 16, "/w/demo.py:16 in step")
