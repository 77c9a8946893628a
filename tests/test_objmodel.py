"""mpi4py's object model of handle classes: a subclass's __new__ passes the handle
to copy to its base's (test_subclass), and every class has ``handle``/``fromhandle``,
``toint``/``fromint`` and ``py2f``/``f2py`` (test_handle)."""
import pytest

from shmrma import MPI


def _subclass(base):
    """A subclass defined as mpi4py's test_subclass defines them."""
    def __new__(cls, other=None):
        return base.__new__(cls, other)
    return type("My" + base.__name__, (base,), {"__new__": __new__})


def _live_request():
    return MPI.COMM_SELF.Isend([MPI.BOTTOM, 0, MPI.BYTE], MPI.PROC_NULL)


@pytest.mark.parametrize("base, make", [
    (MPI.Request, _live_request),
    (MPI.Prequest, lambda: MPI.COMM_SELF.Send_init([MPI.BOTTOM, 0, MPI.BYTE], MPI.PROC_NULL)),
    (MPI.Info, MPI.Info.Create),
    (MPI.Win, lambda: MPI.Win.Create(MPI.BOTTOM)),
    (MPI.Datatype, MPI.INT.Dup),
    (MPI.Session, MPI.Session.Init),
])
def test_a_subclass_new_passing_the_handle_makes_a_handle_to_it(base, make):
    obj = make()
    mine = _subclass(base)(obj)
    assert isinstance(mine, base) and type(mine) is not base
    assert mine == obj and mine
    assert not _subclass(base)()
    obj.free()


def test_a_persistent_request_subclass_starts_through_its_base():
    kind = _subclass(MPI.Prequest)
    request = kind(MPI.COMM_SELF.Send_init([MPI.BOTTOM, 0, MPI.BYTE], MPI.PROC_NULL))
    for _ in range(2):
        MPI.Prequest.Start(request)
        MPI.Request.Wait(request)
    request.Free()
    with pytest.raises(MPI.Exception):
        MPI.Prequest().Start()


def test_an_info_subclass_unpickles_as_its_class():
    import pickle
    kind = _subclass(MPI.Info)
    globals()[kind.__name__] = kind
    kind.__module__ = __name__
    try:
        info = kind(MPI.Info.Create({"a": "1"}))
        copy = pickle.loads(pickle.dumps(info))
        assert type(copy) is kind and copy.items() == [("a", "1")]
    finally:
        del globals()[kind.__name__]


def _handles():
    return [MPI.INT.Dup(), MPI.Op.Create(lambda *_: None), MPI.Info.Create(),
            MPI.COMM_SELF.Get_group(), MPI.COMM_SELF.Get_errhandler(), MPI.Session.Init(),
            MPI.COMM_SELF.Dup(), MPI.Win.Create(MPI.BOTTOM), MPI.MESSAGE_NO_PROC,
            MPI.COMM_SELF.Recv_init(bytearray(0), 0, 0),
            MPI.File.Open(MPI.COMM_SELF, "/dev/null")]


@pytest.mark.parametrize("index", range(11))
def test_handle_fromhandle_toint_fromint_py2f_f2py_agree(index):
    obj = _handles()[index]
    kind = type(obj)
    number = obj.handle
    assert isinstance(number, int) and number > 0
    assert number == obj.toint() == obj.py2f()
    for clone in (kind.fromhandle(number), kind.fromint(number), kind.f2py(number)):
        assert clone == obj and clone is not obj
    with pytest.raises(AttributeError):
        obj.handle = number
    (obj.Free if isinstance(obj, MPI.Comm) else obj.free)()


@pytest.mark.parametrize("null", [MPI.DATATYPE_NULL, MPI.REQUEST_NULL, MPI.INFO_NULL,
                                  MPI.ERRHANDLER_NULL, MPI.SESSION_NULL, MPI.GROUP_NULL,
                                  MPI.WIN_NULL, MPI.OP_NULL, MPI.FILE_NULL, MPI.MESSAGE_NULL,
                                  MPI.COMM_NULL])
def test_a_null_handle_is_zero_and_comes_back_null_of_its_class(null):
    assert null.handle == 0
    back = type(null).fromhandle(0)
    assert back == null and type(back) is type(null) and not back


def test_a_request_from_its_handle_is_of_its_mpi_class():
    request = MPI.COMM_SELF.Recv_init(bytearray(0), 0, 0)
    assert type(type(request).fromhandle(request.handle)) is MPI.Prequest
    request.Free()


def test_errhandler_free_frees_a_handle_and_spares_constants():
    handler = MPI.COMM_SELF.Get_errhandler()
    handler.free()
    assert not handler
    handler.free()
    MPI.ERRORS_RETURN.free()
    assert MPI.ERRORS_RETURN


def test_a_status_is_weakly_referable_and_goes_to_fortran_and_back():
    import weakref
    status = MPI.Status()
    status.source, status.tag, status.error = 1, 2, MPI.ERR_OTHER
    status.Set_elements(MPI.INT, 5)
    assert weakref.ref(status)() is status
    fortran = status.py2f()
    assert len(fortran) == MPI.F_STATUS_SIZE
    assert (fortran[MPI.F_SOURCE], fortran[MPI.F_TAG], fortran[MPI.F_ERROR]) == \
        (1, 2, MPI.ERR_OTHER)
    back = MPI.Status.f2py(fortran)
    assert back == status and back.Get_count(MPI.INT) == 5
    assert MPI.Status().py2f() == [0, 0, MPI.ANY_SOURCE, MPI.ANY_TAG, MPI.SUCCESS]


_CONSTANTS = [MPI.INT, MPI.FLOAT, MPI.INFO_ENV, MPI.SUM, MPI.GROUP_EMPTY, MPI.ERRORS_RETURN,
              MPI.MESSAGE_NO_PROC, MPI.COMM_SELF, MPI.COMM_WORLD]


@pytest.mark.parametrize("obj", _CONSTANTS)
def test_free_spares_a_constant_and_nulls_another_handle_to_a_predefined_object(obj):
    for _ in range(2):
        obj.free()
        assert obj
    if not isinstance(obj, MPI.Errhandler):
        clone = type(obj)(obj)
        assert clone == obj
        for _ in range(2):
            clone.free()
            assert not clone
    assert obj


@pytest.mark.parametrize("make", [lambda: MPI.COMM_SELF.Dup(), lambda: MPI.INT.Dup(),
                                  lambda: MPI.Win.Create(MPI.BOTTOM), MPI.Session.Init,
                                  lambda: MPI.File.Open(MPI.COMM_SELF, "/dev/null")])
def test_free_frees_a_created_object_once(make):
    obj = make()
    for _ in range(2):
        obj.free()
        assert not obj


def test_comm_world_and_self_are_intracomms_that_pickle_by_name():
    import pickle
    for comm in (MPI.COMM_WORLD, MPI.COMM_SELF):
        assert type(comm) is MPI.Intracomm
        assert type(comm).fromhandle(comm.handle) == comm
        assert pickle.loads(pickle.dumps(comm)) is comm


@pytest.mark.parametrize("kind", [MPI.Errhandler, MPI.Session])
def test_a_handle_class_takes_only_a_handle_of_its_kind(kind):
    for other in (MPI.INFO_NULL, MPI.Status(), 1234, "abc"):
        with pytest.raises(TypeError):
            kind(other)
    assert kind() == kind(kind()) and not kind()


class MyNullHandle:
    """Set to a subclass by the pickling test (pickle finds classes by name)."""


@pytest.mark.parametrize("null", [MPI.DATATYPE_NULL, MPI.REQUEST_NULL, MPI.ERRHANDLER_NULL,
                                  MPI.SESSION_NULL, MPI.WIN_NULL, MPI.OP_NULL, MPI.FILE_NULL])
def test_a_copy_of_a_null_handle_keeps_its_class_a_subclass_included(null):
    import copy
    import pickle
    global MyNullHandle
    assert copy.copy(null) is null and pickle.loads(pickle.dumps(null)) is null
    saved = MyNullHandle
    MyNullHandle = type("MyNullHandle", (type(null),), {"__module__": __name__})
    try:
        for copier in (copy.copy, lambda obj: pickle.loads(pickle.dumps(obj))):
            for kind in (type(null), MyNullHandle):
                duplicate = copier(kind(null))
                assert type(duplicate) is kind and duplicate == null
    finally:
        MyNullHandle = saved


def test_a_copy_of_a_handle_to_a_predefined_datatype_or_op_keeps_its_class():
    import pickle
    for constant in (MPI.INT, MPI.SUM):
        kind = type("MyHandle", (type(constant),), {})
        assert kind(constant).__reduce__() == (kind, (constant,))
    assert pickle.loads(pickle.dumps(MPI.Datatype(MPI.INT))) == MPI.INT


@pytest.mark.parametrize("name, address", [("BOTTOM", 0), ("IN_PLACE", -1),
                                           ("BUFFER_AUTOMATIC", -2)])
def test_a_buffer_constant_is_its_address_an_empty_buffer_and_no_number(name, address):
    import operator
    import pickle
    constant = getattr(MPI, name)
    assert constant == address and hash(constant) == hash(address)
    assert operator.index(constant) == address and MPI.Get_address(constant) == address
    view = memoryview(constant)
    assert view.nbytes == 0 and view.obj is None
    assert repr(constant) == name and pickle.loads(pickle.dumps(constant)) is constant
    with pytest.raises(TypeError):
        constant + 1
    with pytest.raises(TypeError):
        constant < 1


def test_a_dynamic_window_base_is_the_int_zero():
    """R26: WIN_BASE is BOTTOM's address, an int as mpi4py returns it (so arithmetic
    on it works, which BOTTOM refuses)."""
    win = MPI.Win.Create_dynamic()
    base = win.Get_attr(MPI.WIN_BASE)
    assert base == 0 and type(base) is int
    win.Free()


@pytest.mark.parametrize("obj", [MPI.INT, MPI.SUM, MPI.INFO_ENV, MPI.GROUP_EMPTY,
                                 MPI.ERRORS_RETURN, MPI.SESSION_NULL, MPI.WIN_NULL,
                                 MPI.FILE_NULL, MPI.MESSAGE_NULL, MPI.REQUEST_NULL,
                                 MPI.COMM_WORLD, MPI.Status()])
def test_handles_are_unhashable_as_in_mpi4py(obj):
    with pytest.raises(TypeError):
        hash(obj)


def test_handleof_is_the_handle_or_the_address_of_a_status():
    import ctypes
    status = MPI.Status()
    status.tag = 7
    fields = (ctypes.c_int * MPI.F_STATUS_SIZE).from_address(MPI._handleof(status))
    assert fields[MPI.F_TAG] == 7
    info = MPI.Info.Create()
    assert MPI._handleof(info) == info.handle > 0 and MPI._handleof(MPI.COMM_NULL) == 0
    info.Free()
    with pytest.raises(TypeError):
        MPI._handleof(None)


@pytest.mark.timeout(60)
def test_every_rank_binds_comm_world_to_its_own_world():
    import shmrma

    def body():
        comm = MPI.COMM_WORLD
        return type(comm) is MPI.Intracomm, comm.Get_rank(), comm.Get_size()

    assert shmrma.launch(body, 2, timeout=45) == [(True, 0, 2), (True, 1, 2)]
