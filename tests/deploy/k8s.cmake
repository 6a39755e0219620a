# deploy_k8s: the Kubernetes manifests of deploy/k8s, offline (no cluster).
# k8s_check.py runs under .venv-deploy's python (kubernetes-validate) and
# renders with .venv-deploy/bin/kubectl (kustomize v2.0.3), both from
# deploy/install-deps.sh; either missing is a failure with the reason.
# It proves that:
#   - every manifest file and every rendered kustomization (serving,
#     training, overlays/cpu, overlays/cuda) is valid in strict mode
#     (unknown fields rejected) against the schemas of Kubernetes 1.25 to
#     1.37, all 13 bundled versions;
#   - TrainJob, PyTorchJob and JobSet use the fields of their API types,
#     and their pod templates are valid core objects, strictly;
#   - the pieces fit: Service and PDB selectors, target and probe ports,
#     the headless Service of the Job's subdomain, --rdzv naming pod 0,
#     --nnodes against completions/parallelism, $(VAR)s defined, the HPA
#     target, every Secret/ConfigMap/PVC present, paths on volumes, the
#     security settings, and per overlay the image tag, --device and GPUs;
#   - each of the 22 broken fixtures in tests/deploy/k8s-broken is rejected
#     for the reason it names (a test that passes them fails).
# About 15 s (most of it the 13 schema versions).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME deploy_k8s
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/k8s_check.py
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(deploy_k8s PROPERTIES LABELS deploy TIMEOUT 180)
