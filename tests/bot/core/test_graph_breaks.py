from bot.core.graph_breaks import GraphBreakRegistry, load_registry, tidy_registry_text

REGISTRY = {
    "GB0001": [{"Gb_type": "Data-dependent branching", "Context": "", "Explanation": "Detected {thing} branching",
                "Hints": ["Use `torch.cond`."]}],
    "GB0002": [{"Gb_type": "Failed to trace builtin operator", "Context": "",
                "Explanation": "\"Dynamo does not know how to trace builtin operator `{fn}` \" \"with argument types {types}\"",
                "Hints": []}],
}


def test_lookup_by_literal_id_by_gb_type_and_by_explanation():
    registry = GraphBreakRegistry.from_json(REGISTRY)
    assert registry.find_id(["visit https://x/gb/gb0002.html"]) == "GB0002"
    assert registry.find_id(["torch._dynamo.exc.Unsupported: Data-dependent branching"]) == "GB0001"
    assert registry.find_id(["  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types ['str']"]) == "GB0002"
    assert registry.find_id(["nothing here", "GB9999 is not registered"]) is None


def test_registry_text_written_as_python_literals_is_tidied():
    assert tidy_registry_text('"a " "b" + trace_info') == "a b"
    assert tidy_registry_text("plain") == "plain"


def test_installed_torch_registry_is_preferred_and_complete():
    registry = load_registry()
    assert registry.get("GB0170").gb_type == "Data-dependent branching"
    assert len(registry.by_id) > 400
