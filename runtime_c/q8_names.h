/*
 * q8_names.h - the link names of the runtime's functions.
 *
 * Every header of the runtime includes this one first. Here (the runtime as shipped, and
 * the shared runtime that `onnx2mcu runtime` writes) the functions keep their q8_ names.
 * A generated project replaces this file with one that renames each exported function
 * to NAME_q8_..., so that the runtimes of several models link into one image without
 * duplicate symbols. The kernel table, codegen/ops/kernels.py, lists the names
 * (checked against the compiled runtime by the tests).
 */
#ifndef Q8_NAMES_H
#define Q8_NAMES_H
#endif /* Q8_NAMES_H */
