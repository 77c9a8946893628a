"""Integer handles (toint/fromint, MPI 4.1 §19.3.6) of Datatype, Op, Group and Info."""
import pytest

from shmrma import MPI
from shmrma.core import errors
from mpitest import raises_mpi


def _user_objects():
    return [MPI.INT.Dup(), MPI.Op.Create(lambda a, b, t: None), MPI.Info.Create(),
            MPI.COMM_SELF.Get_group()]


@pytest.mark.parametrize("index", range(4))
def test_fromint_gives_a_new_object_on_the_same_mpi_object(index):
    obj = _user_objects()[index]
    kind = type(obj)
    number = obj.toint()
    assert number == obj.toint() and number > 0
    clone = kind.fromint(number)
    assert clone == obj and clone is not obj
    obj.Free()


@pytest.mark.parametrize("null", [MPI.DATATYPE_NULL, MPI.OP_NULL, MPI.INFO_NULL,
                                  MPI.GROUP_NULL])
def test_the_null_handle_is_zero(null):
    assert null.toint() == 0 and type(null).fromint(0) == null


def test_an_unknown_integer_is_err_arg_and_a_non_integer_a_type_error():
    with raises_mpi(errors.ERR_ARG):
        MPI.Group.fromint(10 ** 9)
    with pytest.raises(TypeError):
        MPI.Op.fromint("1")
