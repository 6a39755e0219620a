# Fuzz targets of gf_quality's parsers of outside input (included by
# tests/fuzz/CMakeLists.txt): the FID feature-cache reader. Seed corpus in
# corpus/feat_cache/, written by `test_feat_cache --write-corpus DIR`
# (tests/quality/test_feat_cache.c).
gf_add_fuzz_target(feat_cache ${CMAKE_CURRENT_LIST_DIR}/fuzz_feat_cache.c gf_quality)
