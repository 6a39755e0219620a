# syntax=docker/dockerfile:1
# The container image ganflow:<version> for Docker, Podman or buildah
# (deploy/image/build.sh builds the same image with no registry or engine;
# docs/deploy.md compares the two):
#   docker build -t ganflow:0.1.0 .
# and its CUDA variant (CUDA 13, cuDNN 9, NCCL from NVIDIA's images):
#   docker build -t ganflow:0.1.0-cuda \
#     --build-arg BUILD_BASE=nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04 \
#     --build-arg RUNTIME_BASE=nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04 \
#     --build-arg GF_CUDA=ON .
# Two stages: `build` compiles the three executables (Release, no tests),
# and with GF_CUDA=ON the CUDA backend module they load only for --device
# cuda, and lists the packages of the shared libraries they load
# (deploy/image/runtime-packages.sh, which reads the module too); the runtime stage installs only those
# and deploy/image/runtime-extra.txt: no compiler, no headers. It runs as
# the user ganflow (uid 10001) and its default command is ganflow-serve;
# the manifests under deploy/ give the command and flags of each use.
ARG BUILD_BASE=debian:bookworm
ARG RUNTIME_BASE=debian:bookworm-slim

FROM ${BUILD_BASE} AS build
ARG GF_CUDA=OFF
ARG GF_SOURCE_COMMIT=
ENV DEBIAN_FRONTEND=noninteractive
COPY deploy/image/build-packages.txt /tmp/build-packages.txt
RUN apt-get update \
 && sed 's/#.*//' /tmp/build-packages.txt | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DGF_BUILD_TESTS=OFF \
      -DGF_CUDA=${GF_CUDA} -DGF_SOURCE_COMMIT=${GF_SOURCE_COMMIT} \
 && cmake --build /build -j"$(nproc)" --target ganflow-train ganflow-serve ganflow \
 && DESTDIR=/out cmake --install /build --strip \
 && /src/deploy/image/runtime-packages.sh /out/usr/local/bin/* >/out/runtime-packages.txt

FROM ${RUNTIME_BASE}
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
COPY deploy/image/runtime-extra.txt /tmp/runtime-extra.txt
RUN apt-get update \
 && sed 's/#.*//' /tmp/runtime-packages.txt /tmp/runtime-extra.txt \
    | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt /tmp/runtime-extra.txt \
 && groupadd --gid 10001 ganflow \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/ganflow --no-create-home \
      --shell /bin/sh ganflow \
 && mkdir -p /var/lib/ganflow/checkpoints /var/cache/ganflow-serve /data \
 && chown -R 10001:10001 /var/lib/ganflow /var/cache/ganflow-serve
# The executables, and with GF_CUDA=ON the CUDA backend module they open
# with dlopen (/usr/local/lib/ganflow/libganflow_cuda.so).
COPY --from=build /out/usr/local/ /usr/local/
ENV HOME=/var/lib/ganflow LANG=C.UTF-8
WORKDIR /var/lib/ganflow
USER 10001:10001
EXPOSE 8080
VOLUME ["/var/lib/ganflow/checkpoints", "/var/cache/ganflow-serve"]
STOPSIGNAL SIGTERM
ARG GF_VERSION=0.1.0
LABEL org.opencontainers.image.title=ganflow \
      org.opencontainers.image.version=${GF_VERSION}
CMD ["ganflow-serve", "--listen", "0.0.0.0:8080", "--cache-dir", "/var/cache/ganflow-serve"]
