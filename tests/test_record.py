
from hbl import record
from hbl.core import ffi


def test_dtype_is_the_c_struct():
    assert record.REQUEST.itemsize == ffi.sizeof("struct hbl_request")
    for name, field in ffi.typeof("struct hbl_request").fields:
        if name.startswith("_"):
            continue
        assert record.REQUEST.fields[name][1] == field.offset
        assert record.REQUEST.fields[name][0].itemsize == ffi.sizeof(field.type)


def test_values_cross_the_boundary_unchanged():
    a = record.empty(2)
    a["offset"] = [2 ** 63 + 12345, 7]
    a["length"] = [4096, 2 ** 32 - 1]
    a["op"] = [record.WRITE, record.DISCARD]
    ptr, keep = record.as_cdata(a)
    assert ptr[0].offset == 2 ** 63 + 12345 and ptr[1].length == 2 ** 32 - 1
    assert ptr[0].op == record.WRITE and ptr[1].op == record.DISCARD


def test_concat_keeps_layout():
    a, b = record.empty(2), record.empty(3)
    b["offset"] = 9
    c = record.concat([a, b])
    assert c.dtype == record.REQUEST and len(c) == 5 and list(c["offset"]) == [0, 0, 9, 9, 9]
