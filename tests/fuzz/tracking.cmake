# tracking.cmake - fuzz targets for the tracking library's parsers of
# outside input (server answers, models:/ URIs, artifact paths and keys,
# the on-disk outbox, the promotion gate's METRIC[:min|max]). Included by
# tests/fuzz/CMakeLists.txt; each target's seed corpus is
# corpus/tracking_<name>/. The parsers' declarations are in
# the library's private headers, hence the extra include directory.
foreach(name error json model_uri path outbox gate_spec)
  gf_add_fuzz_target(tracking_${name}
    ${CMAKE_CURRENT_LIST_DIR}/fuzz_tracking_${name}.c mlflow_client)
  target_include_directories(fuzz_tracking_${name} PRIVATE
    ${PROJECT_SOURCE_DIR}/tracking/src)
endforeach()
