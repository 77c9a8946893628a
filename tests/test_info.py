"""Info objects and to_dict, which every info argument goes through (docs/api.md).

Window hints (R29-R32) reach the windows through to_dict.

Expected behaviour was read off mpi4py 4.1 on MPICH 5.0, except the error class
of calls on a null info: ERR_INFO here (the standard's), ERR_ARG in MPICH.
"""
import pickle

import pytest

from shmrma.core import errors
from shmrma.core.constants import MAX_INFO_KEY, MAX_INFO_VAL
from shmrma.core.info import INFO_ENV, INFO_NULL, Info, to_dict
from mpitest import raises_mpi


@pytest.fixture
def info():
    return Info.Create({"x": "1", "y": "2"})


# -- MPI calls -------------------------------------------------------------------

@pytest.mark.parametrize("items", [
    {"x": "1", "y": "2"}, [("x", "1"), ("y", "2")], iter([("x", "1"), ("y", "2")])])
def test_create_from_a_mapping_or_pairs_keeps_the_order(items):
    assert Info.Create(items).items() == [("x", "1"), ("y", "2")]


def test_create_from_an_info_copies_it(info):
    copy = Info.Create(info)
    assert copy.items() == info.items() and copy != info


def test_create_without_items_is_empty_and_not_null():
    created = Info.Create()
    assert created and len(created) == 0 and created != INFO_NULL


@pytest.mark.parametrize("items,error", [
    ([("a",)], ValueError), ({"a": 1}, TypeError), ({1: "a"}, TypeError), (5, TypeError)])
def test_create_with_bad_items(items, error):
    with pytest.raises(error):
        Info.Create(items)


def test_set_get_delete(info):
    info.Set("z", "3")
    assert info.Get("z") == "3" and info.Get_nkeys() == 3
    info.Delete("z")
    assert info.Get("z") is None and info.Get_nkeys() == 2


def test_overwriting_a_key_keeps_its_position(info):
    info.Set("x", "new")
    assert info.items() == [("x", "new"), ("y", "2")]


def test_get_nthkey_in_order(info):
    assert [info.Get_nthkey(n) for n in range(info.Get_nkeys())] == ["x", "y"]


@pytest.mark.parametrize("n", [2, 99, -1])
def test_get_nthkey_out_of_range_is_err_arg(info, n):
    with raises_mpi(errors.ERR_ARG):
        info.Get_nthkey(n)


def test_get_nthkey_needs_an_integer(info):
    with pytest.raises(TypeError):
        info.Get_nthkey(1.0)


def test_bytes_are_accepted_and_decoded_like_mpi4py(info):
    info.Set(b"bk", b"bv")
    assert info.Get("bk") == "bv" and info.Get(b"bk") == "bv"


def test_unicode_round_trips(info):
    info.Set("ключ", "значение")
    assert info["ключ"] == "значение"


def test_empty_values_are_allowed(info):
    info.Set("empty", "")
    assert info.Get("empty") == "" and "empty" in info


def test_dup_is_a_new_independent_info(info):
    twin = info.Dup()
    twin.Set("x", "changed")
    assert twin != info and info.Get("x") == "1"


def test_free_nulls_the_info_and_copies_of_the_handle_see_it_gone(info):
    alias = Info(info)
    assert alias == info and alias is not info
    info.Free()
    assert info == INFO_NULL and not info
    with raises_mpi(errors.ERR_INFO):
        info.Free()
    for call in (alias.Get_nkeys, alias.keys, lambda: alias.Get("x"), lambda: alias.Set("a", "b")):
        with raises_mpi(errors.ERR_INFO) as error:
            call()
        assert "freed" in str(error.value)


def test_copies_share_their_contents(info):
    Info(info).Set("shared", "yes")
    assert info.Get("shared") == "yes"


# -- bad keys and values: the right class, and nothing changed ---------------------

LONG_KEY = "k" * (MAX_INFO_KEY + 1)


@pytest.mark.parametrize("call,key,error_class", [
    ("Set", "", errors.ERR_INFO_KEY), ("Set", "   ", errors.ERR_INFO_KEY),
    ("Set", LONG_KEY, errors.ERR_INFO_KEY), ("Set", "é" * 128, errors.ERR_INFO_KEY),
    ("Get", "", errors.ERR_INFO_KEY), ("Get", LONG_KEY, errors.ERR_INFO_KEY),
    ("Delete", "", errors.ERR_INFO_KEY), ("Delete", LONG_KEY, errors.ERR_INFO_KEY),
    ("Delete", "missing", errors.ERR_INFO_NOKEY)])
def test_bad_keys(info, call, key, error_class):
    before = info.items()
    args = (key, "v") if call == "Set" else (key,)
    with raises_mpi(error_class):
        getattr(info, call)(*args)
    assert info.items() == before


def test_key_and_value_limits_are_inclusive(info):
    info.Set("k" * MAX_INFO_KEY, "v" * MAX_INFO_VAL)
    assert info.Get("k" * MAX_INFO_KEY) == "v" * MAX_INFO_VAL


@pytest.mark.parametrize("value", ["v" * (MAX_INFO_VAL + 1), "é" * (MAX_INFO_VAL // 2 + 1)])
def test_too_long_values(info, value):
    with raises_mpi(errors.ERR_INFO_VALUE) as error:
        info.Set("x", value)
    assert "MAX_INFO_VAL" in str(error.value)
    assert info.Get("x") == "1"


@pytest.mark.parametrize("key,value,error", [
    (1, "v", TypeError), ("k", 1, TypeError), ("k", None, TypeError),
    ("a\0b", "v", ValueError), ("k", "a\0b", ValueError), (bytearray(b"k"), "v", TypeError)])
def test_non_text_keys_and_values(info, key, value, error):
    before = info.items()
    with pytest.raises(error):
        info.Set(key, value)
    assert info.items() == before


# -- null and read-only infos --------------------------------------------------------

@pytest.mark.parametrize("call,args", [
    ("Set", ("a", "b")), ("Get", ("a",)), ("Delete", ("a",)), ("Get_nkeys", ()),
    ("Get_nthkey", (0,)), ("Dup", ()), ("Free", ())])
def test_mpi_calls_on_info_null_raise_err_info(call, args):
    with raises_mpi(errors.ERR_INFO) as error:
        getattr(INFO_NULL, call)(*args)
    assert "INFO_NULL" in str(error.value)
    assert INFO_NULL == Info() and not INFO_NULL


def test_mapping_protocol_on_info_null_follows_mpi4py():
    assert len(INFO_NULL) == 0 and "a" not in INFO_NULL and 5 not in INFO_NULL
    assert (INFO_NULL.keys(), INFO_NULL.values(), INFO_NULL.items(), list(INFO_NULL)) == \
        ([], [], [], [])
    assert INFO_NULL.get("a", "default") == "default"
    assert INFO_NULL.pop("a", "default") == "default"
    copy = INFO_NULL.copy()
    assert copy == INFO_NULL and copy is not INFO_NULL
    INFO_NULL.clear()
    for call in (lambda: INFO_NULL["a"], lambda: INFO_NULL.__setitem__("a", "b"),
                 lambda: INFO_NULL.__delitem__("a"), lambda: INFO_NULL.update({"a": "b"}),
                 lambda: INFO_NULL.pop("a"), INFO_NULL.popitem):
        with pytest.raises(KeyError):
            call()
    assert not INFO_NULL


@pytest.mark.parametrize("call,args", [("Set", ("a", "b")), ("Delete", ("a",)), ("Free", ())])
def test_info_env_is_read_only(call, args):
    with raises_mpi(errors.ERR_INFO) as error:
        getattr(INFO_ENV, call)(*args)
    assert "read-only" in str(error.value)
    assert INFO_ENV and INFO_ENV.items() == []


def test_info_env_can_be_read_and_duplicated_into_a_writable_info():
    assert INFO_ENV.Get("command") is None and INFO_ENV.Get_nkeys() == 0
    twin = INFO_ENV.Dup()
    twin.Set("a", "b")
    assert twin.items() == [("a", "b")] and INFO_ENV.items() == []


def test_free_helper_skips_null_and_predefined(info):
    INFO_NULL.free()
    INFO_ENV.free()
    assert INFO_ENV
    info.free()
    assert info == INFO_NULL


# -- mapping protocol -------------------------------------------------------------------

def test_mapping_reads(info):
    assert len(info) == 2 and "x" in info and "z" not in info
    assert list(info) == ["x", "y"] and info.keys() == ["x", "y"]
    assert info.values() == ["1", "2"] and info["y"] == "2"
    assert info.get("x") == "1" and info.get("z") is None and info.get("z", "d") == "d"


def test_mapping_key_checks(info):
    with pytest.raises(KeyError):
        info["z"]
    with pytest.raises(TypeError):
        5 in info
    with raises_mpi(errors.ERR_INFO_KEY):
        LONG_KEY in info


def test_mapping_writes(info):
    info["z"] = "3"
    del info["x"]
    assert info.items() == [("y", "2"), ("z", "3")]
    with pytest.raises(KeyError):
        del info["x"]


def test_update_with_mapping_pairs_and_keywords(info):
    info.update({"a": "1"})
    info.update([("b", "2")], c="3")
    info.update(Info.Create({"d": "4"}))
    assert info.keys() == ["x", "y", "a", "b", "c", "d"]
    with pytest.raises(TypeError):
        info.update(5)


def test_pop_and_popitem(info):
    assert info.pop("x") == "1" and info.pop("x", "gone") == "gone"
    with pytest.raises(KeyError):
        info.pop("x")
    info.Set("last", "L")
    assert info.popitem() == ("last", "L")  # the last item, as mpi4py's code does
    assert info.popitem() == ("y", "2")
    with pytest.raises(KeyError):
        info.popitem()


def test_copy_and_clear(info):
    copy = info.copy()
    info.clear()
    assert info.items() == [] and info and copy.items() == [("x", "1"), ("y", "2")]


def test_equality_hash_and_type_checks(info):
    assert info == Info(info) and info != info.Dup() and info != {"x": "1"}
    with pytest.raises(TypeError):     # unhashable, as in mpi4py
        hash(info)
    with pytest.raises(TypeError, match="expected Info"):
        Info({"x": "1"})


def test_repr():
    assert repr(INFO_NULL) == "MPI.INFO_NULL" and repr(INFO_ENV) == "MPI.INFO_ENV"
    assert "'x': '1'" in repr(Info.Create({"x": "1"}))


def test_pickling(info):
    assert pickle.loads(pickle.dumps(INFO_NULL)) is INFO_NULL
    assert pickle.loads(pickle.dumps(INFO_ENV)) is INFO_ENV
    assert pickle.loads(pickle.dumps(info)).items() == info.items()
    assert pickle.loads(pickle.dumps(Info())) == INFO_NULL


def test_a_copy_of_info_env_unpickles_as_a_new_handle_on_it():
    clone = pickle.loads(pickle.dumps(Info(INFO_ENV)))
    assert clone is not INFO_ENV and clone == INFO_ENV
    with raises_mpi(errors.ERR_INFO):
        clone.Set("key", "value")      # still the read-only INFO_ENV


# -- Create_env: MPICH's way of filling it -------------------------------------------

@pytest.mark.parametrize("args,expected", [
    (None, {}), ([], {}), ((), {}), ("prog", {"command": "prog"}),
    (b"prog", {"command": "prog"}), (("prog",), {"command": "prog"}),
    (["prog", "a", b"b c"], {"command": "prog", "argv": "a b c"})])
def test_create_env_describes_the_arguments_as_mpich_does(args, expected):
    env = Info.Create_env(args)
    assert dict(env.items()) == expected
    env.Set("x", "1")                   # a new, writable info
    env.Free()


def test_create_env_of_a_subclass_and_bad_arguments():
    class MyInfo(Info):
        pass
    assert type(MyInfo.Create_env(args=None)) is MyInfo
    for bad in (1, [1]):
        with pytest.raises(TypeError):
            Info.Create_env(bad)


# -- to_dict: what every call taking info uses -----------------------------------------

@pytest.mark.parametrize("argument", [None, INFO_NULL, Info(), {}])
def test_to_dict_of_nothing_is_empty(argument):
    assert to_dict(argument) == {}


def test_to_dict_of_an_info_is_a_new_dict(info):
    hints = to_dict(info)
    hints["x"] = "changed"
    assert hints == {"x": "changed", "y": "2"} and info.Get("x") == "1"


def test_to_dict_converts_plain_dict_values():
    source = {"no_locks": True, "same_size": False, "n": 4, b"key": b"value", "s": "text"}
    assert to_dict(source) == {"no_locks": "true", "same_size": "false", "n": "4",
                               "key": "value", "s": "text"}
    assert source["no_locks"] is True


@pytest.mark.parametrize("argument", [["no_locks", "true"], "no_locks=true", 5, object()])
def test_to_dict_rejects_other_types_naming_them(argument):
    with pytest.raises(TypeError, match=type(argument).__name__):
        to_dict(argument)


@pytest.mark.parametrize("argument,error_class", [
    ({"": "v"}, errors.ERR_INFO_KEY), ({LONG_KEY: "v"}, errors.ERR_INFO_KEY),
    ({"k": "v" * (MAX_INFO_VAL + 1)}, errors.ERR_INFO_VALUE)])
def test_to_dict_checks_keys_and_values_like_set(argument, error_class):
    with raises_mpi(error_class):
        to_dict(argument)


def test_to_dict_rejects_non_text_keys():
    with pytest.raises(TypeError, match="int"):
        to_dict({1: "v"})
