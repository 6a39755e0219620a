# deploy/compose/compose.yaml, checked offline with docker-compose's own
# parser (`docker-compose config`, Debian's 1.29.2; no container engine):
#   deploy_compose         the stack passes `config -q` with .env.example and
#                          with only POSTGRES_PASSWORD set, is refused without
#                          it, and its rendered config holds the stack's facts
#                          (healthchecks on /health and /v2/health/ready,
#                          serve following @production, train's grace period
#                          and one-shot restart policy, ports, named volumes,
#                          depends_on conditions, secrets); mlflow.Dockerfile
#                          pins deploy/install-deps.sh's MLflow and psycopg.
#                          About 2 s.
#   deploy_compose_broken  every override in compose-broken/ (a misspelled
#                          key, wrong types, a missing or v2-only dependency,
#                          wrong facts), merged onto compose.yaml, is rejected
#                          by the same check for the reason its `# expect:`
#                          line names. About 10 s.
# A missing docker-compose fails both (it is never a skip).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(GF_COMPOSE_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/compose_check.py)
add_test(NAME deploy_compose
         COMMAND ${GF_COMPOSE_CHECK} check --root ${PROJECT_SOURCE_DIR}
                 --tmp-dir ${CMAKE_CURRENT_BINARY_DIR}/tmp-compose/check)
add_test(NAME deploy_compose_broken
         COMMAND ${GF_COMPOSE_CHECK} broken --root ${PROJECT_SOURCE_DIR}
                 --tmp-dir ${CMAKE_CURRENT_BINARY_DIR}/tmp-compose/broken)
set_tests_properties(deploy_compose deploy_compose_broken PROPERTIES
                     LABELS deploy TIMEOUT 120)
