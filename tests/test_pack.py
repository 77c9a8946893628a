"""Pack, Unpack, Pack_size and the external32 calls (MPI-3.1 §4.2, §4.3, §13.5.2);
errors are MPI.Exception with a class and a message (A39) and change nothing."""
import numpy as np
import pytest

from shmrma import MPI
from mpitest import raises_mpi

EXT32 = "external32"


def test_pack_and_unpack_follow_the_type_map_and_chain_positions():
    """§4.2: Pack appends the items of the input (as many whole items as it holds)
    in type-map order at ``position`` and returns the next position; Unpack fills
    as many items as the output holds; Pack_size bounds what Pack writes."""
    comm = MPI.COMM_SELF
    column = MPI.INT.Create_vector(3, 1, 3).Commit()
    matrix = np.arange(9, dtype="i4").reshape(3, 3)
    doubles = np.array([0.5, 1.5])
    room = column.Pack_size(1, comm) + MPI.DOUBLE.Pack_size(2, comm)
    assert column.Pack_size(1, comm) == 12 and MPI.DOUBLE.Pack_size(0, comm) == 0
    packed = bytearray(room + 3)
    position = column.Pack(matrix, packed, 0, comm)
    position = MPI.DOUBLE.Pack(doubles, packed, position, comm)
    assert position == room
    assert np.frombuffer(packed, "i4", 3).tolist() == [0, 3, 6]
    into, back = np.full((3, 3), -1, dtype="i4"), np.zeros(2)
    position = column.Unpack(packed, 0, into, comm)
    assert MPI.DOUBLE.Unpack(packed, position, back, comm) == room
    assert into[:, 0].tolist() == [0, 3, 6] and (into[:, 1:] == -1).all()
    assert back.tolist() == [0.5, 1.5]
    column.Free()


def test_pack_errors_change_nothing():
    comm = MPI.COMM_SELF
    out = bytearray(b"\xff" * 6)
    with raises_mpi(MPI.ERR_TRUNCATE, match="do not fit"):
        MPI.INT.Pack(np.arange(2, dtype="i4"), out, 0, comm)
    with raises_mpi(MPI.ERR_TRUNCATE, match="reach past"):
        MPI.INT.Unpack(bytearray(4), 2, np.zeros(1, dtype="i4"), comm)
    with raises_mpi(MPI.ERR_UNSUPPORTED_DATAREP, match="external32"):
        MPI.INT.Pack_external("native", np.zeros(1, "i4"), out, 0)
    with raises_mpi(MPI.ERR_CONVERSION, match="does not fit in its 4 bytes"):
        MPI.LONG.Pack_external(EXT32, np.array([2**40, 1]), out, 0)
    with raises_mpi(MPI.ERR_COUNT, match="negative"):
        MPI.INT.Pack_size(-1, comm)
    assert out == bytearray(b"\xff" * 6)


def test_external32_is_big_endian_with_the_standard_sizes():
    """§13.5.2 Table 13.2: big-endian; long is 4 bytes, long double IEEE binary128;
    a pair type is its members without padding."""
    def external(datatype, values):
        out = bytearray(datatype.Pack_external_size(EXT32, len(values)))
        assert datatype.Pack_external(EXT32, values, out, 0) == len(out)
        return out.hex()

    assert external(MPI.INT, np.array([1, -2], dtype="i4")) == "00000001fffffffe"
    assert external(MPI.LONG, np.array([-3])) == "fffffffd"
    assert external(MPI.DOUBLE, np.array([1.5])) == "3ff8000000000000"
    assert external(MPI.LONG_DOUBLE, np.array([1.5], dtype="g")) == "3fff8" + "0" * 27
    pair = np.zeros(1, np.dtype([("value", "f8"), ("index", "i4")], align=True))
    pair["value"], pair["index"] = 1.5, 7
    assert external(MPI.DOUBLE_INT, pair) == "3ff8000000000000" + "00000007"


@pytest.mark.parametrize("name", ["SHORT", "INT", "LONG", "LONG_LONG", "UNSIGNED",
                                  "FLOAT", "DOUBLE", "LONG_DOUBLE", "C_DOUBLE_COMPLEX",
                                  "C_LONG_DOUBLE_COMPLEX", "C_BOOL", "SIGNED_CHAR"])
def test_external32_round_trips(name):
    datatype = getattr(MPI, name)
    dtype = datatype._handle.dtype
    values = (np.arange(-2, 3) % 2 == 0 if dtype.kind == "b" else
              np.array([-2.5e-5, 0, 1, 3.75e10, -1.25], dtype=dtype) if dtype.kind in "fc"
              else np.array([0, 1, 2, 100, 7], dtype=dtype))
    if dtype.kind == "c":
        values = values + 1j * values[::-1]
    packed = bytearray(datatype.Pack_external_size(EXT32, len(values)))
    datatype.Pack_external(EXT32, values, packed, 0)
    back = np.zeros_like(values)
    assert datatype.Unpack_external(EXT32, packed, 0, back) == len(packed)
    assert (back == values).all()
