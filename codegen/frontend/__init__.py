"""ONNX -> IR: load and check a model (`importer`), fold its constant subgraphs
(`folding`), read its tensors' data within the limits (`tensor_data`). Each node is
checked and its outputs inferred by its operator family (codegen.ops)."""
