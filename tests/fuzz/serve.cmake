# serve.cmake - fuzz targets for ganflow-serve's parsers of client input:
# the generate query string, the JSON bodies (KServe V2 infer, MLflow
# invocations) and a V2 infer request with the binary tensor data extension
# (Inference-Header-Content-Length value, JSON header, raw tensor bytes).
# Included by tests/fuzz/CMakeLists.txt; seed corpora in
# corpus/serve_<name>/.
foreach(name query json v2_binary)
  gf_add_fuzz_target(serve_${name}
    ${CMAKE_CURRENT_LIST_DIR}/fuzz_serve_${name}.c gfs_serve)
endforeach()
