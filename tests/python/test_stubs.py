"""The type stubs (python/clustertwin/*.pyi) parse and keep up with the code they describe."""
import ast
import importlib
import inspect
import os

import pytest

import clustertwin as ct

PACKAGE = os.path.dirname(ct.__file__)
STUBS = sorted(f for f in os.listdir(PACKAGE) if f.endswith(".pyi"))


def stub_tree(name: str) -> ast.Module:
    with open(os.path.join(PACKAGE, name)) as f:
        return ast.parse(f.read(), filename=name)


def bound_names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Names a stub body binds: defs, classes, annotated or assigned names, ``import x as x`` re-exports."""
    out: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            out.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.ImportFrom):
            out.update({a.asname: node for a in node.names if a.asname is not None and a.asname == a.name})
    return out


def stub_parameters(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args]
    names += [a.vararg.arg] if a.vararg else []
    names += [p.arg for p in a.kwonlyargs]
    names += [a.kwarg.arg] if a.kwarg else []
    return names


def runtime_parameters(obj) -> list[str]:
    return list(inspect.signature(obj).parameters)


def public_runtime_names(module) -> list[str]:
    """Functions and classes the module defines (or lists in __all__), not starting with '_'."""
    names = set(getattr(module, "__all__", []))
    for name, obj in vars(module).items():
        if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj)) \
                and obj.__module__ == module.__name__:
            names.add(name)
    return sorted(names)


def test_py_typed_marker_and_every_stub_parses():
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))
    assert "__init__.pyi" in STUBS and "api.pyi" in STUBS and "sweep.pyi" in STUBS
    for name in STUBS:
        stub_tree(name)


def test_package_stub_covers_every_public_name():
    tree = stub_tree("__init__.pyi")
    bound = bound_names(tree.body)
    missing = [name for name in ct.__all__ if name not in bound]
    assert not missing, f"__init__.pyi lacks {missing}"
    assert sorted(ast.literal_eval(bound["__all__"].value)) == sorted(ct.__all__)
    public = [n for n in dir(ct) if not n.startswith("_") and not inspect.ismodule(getattr(ct, n))]
    assert set(public) <= set(bound), f"public names without a stub: {set(public) - set(bound)}"


@pytest.mark.parametrize("stub", [s for s in STUBS if s != "__init__.pyi"])
def test_module_stub_matches_the_module(stub):
    module = importlib.import_module(f"clustertwin.{stub[:-4]}")
    tree = stub_tree(stub)
    bound = bound_names(tree.body)
    if hasattr(module, "__all__"):
        assert "__all__" in bound and sorted(ast.literal_eval(bound["__all__"].value)) == sorted(module.__all__)
    missing = [n for n in public_runtime_names(module) if n not in bound]
    assert not missing, f"{stub} lacks {missing}"
    for name, node in bound.items():
        obj = getattr(module, name, None)
        assert obj is not None or name.endswith(("Like", "Spec")), f"{stub}: {name} is not in {module.__name__}"
        if isinstance(node, ast.FunctionDef):
            assert stub_parameters(node) == runtime_parameters(obj), f"{stub}: {name} parameters"
        elif isinstance(node, ast.ClassDef):
            check_class(stub, obj, node, bound)


def stub_methods(node: ast.ClassDef, bound: dict[str, ast.AST]) -> dict[str, ast.FunctionDef]:
    """The methods a stub class declares or inherits from stub classes of the same file."""
    out: dict[str, ast.FunctionDef] = {}
    for base in node.bases:
        parent = bound.get(getattr(base, "id", ""))
        if isinstance(parent, ast.ClassDef):
            out.update(stub_methods(parent, bound))
    out.update({n.name: n for n in node.body if isinstance(n, ast.FunctionDef)})
    return out


def check_class(stub: str, cls: type, node: ast.ClassDef, bound: dict[str, ast.AST]) -> None:
    members = stub_methods(node, bound)
    for name, value in vars(cls).items():
        if name.startswith("_") and name not in ("__init__", "__call__"):
            continue
        if isinstance(value, property) or inspect.isfunction(value):
            assert name in members, f"{stub}: {cls.__name__}.{name} has no stub"
    for name, fn in members.items():
        runtime = getattr(cls, name)
        if isinstance(runtime, property):
            assert any(getattr(d, "id", "") == "property" for d in fn.decorator_list), f"{cls.__name__}.{name}"
        else:
            assert stub_parameters(fn) == runtime_parameters(runtime), f"{stub}: {cls.__name__}.{name} parameters"
