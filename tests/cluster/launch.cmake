# (included by tests/cluster/CMakeLists.txt) `ganflow launch --nnodes`
# across hosts (test_cluster_launch.c): one agent
# per host, through a host killed whole (3 hosts, a spare takes over), a
# link cut mid all-reduce and healed, and a host stalled (SIGSTOP) and
# resumed (node settings from Kubeflow's PET_* variables); each checks the
# rounds' world sizes, one MLflow run with one point per (key, step), and
# a final checkpoint byte-identical to the undisturbed 1-rank job that
# cluster_launch_ref runs first (~35 s each).
add_executable(test_cluster_launch test_cluster_launch.c)
target_link_libraries(test_cluster_launch PRIVATE gf_trainer mlflow_client
  gf_model gf_kernels)
target_include_directories(test_cluster_launch PRIVATE ${GF_TEST_SUPPORT_DIR})
target_compile_definitions(test_cluster_launch PRIVATE
  GF_TRAIN_BIN="$<TARGET_FILE:ganflow-train>"
  GF_GANFLOW_BIN="$<TARGET_FILE:ganflow>"
  GF_CLUSTER_SH="${GF_CLUSTER_SH}"
  GF_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  GF_TEST_TMP="${CMAKE_CURRENT_BINARY_DIR}/tmp-cluster-launch")
add_dependencies(test_cluster_launch ganflow-train ganflow)
add_test(NAME cluster_launch_ref COMMAND test_cluster_launch ref)
set_tests_properties(cluster_launch_ref PROPERTIES
  LABELS "cluster;integration" TIMEOUT 300 FIXTURES_REQUIRED mlflow
  FIXTURES_SETUP cluster_launch_ref
  ENVIRONMENT "GF_TEST_MLFLOW_STATE=${CMAKE_BINARY_DIR}/tests/tracking/mlflow-fixture")
# Label cluster: tests/run-all.sh runs these in the Release build only (the
# sanitizers see the node agents and the rendezvous in launch_nodes).
foreach(sc kill cut stall)
  add_test(NAME cluster_launch_${sc} COMMAND test_cluster_launch ${sc})
  set_tests_properties(cluster_launch_${sc} PROPERTIES
    LABELS "cluster;integration" TIMEOUT 400 SKIP_RETURN_CODE 77
    FIXTURES_REQUIRED "mlflow;cluster_launch_ref"
    ENVIRONMENT "GF_TEST_MLFLOW_STATE=${CMAKE_BINARY_DIR}/tests/tracking/mlflow-fixture")
endforeach()
