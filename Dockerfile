# gpu-tenancy container image: build on Debian bookworm, run on bookworm-slim as a non-root user.
#   docker build -t gpu-tenancy:latest .
# (docs/install.md, "Deploy", step 1 says how to get the image into a cluster.)

FROM debian:bookworm AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      cmake ninja-build g++ pkg-config \
      libcpp-httplib-dev libssl-dev rapidjson-dev libyaml-cpp-dev libabsl-dev \
      libboost1.81-dev libjemalloc-dev libgrpc++-dev libprotobuf-dev protobuf-compiler-grpc \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
 && cmake --build /build --target gpu-tenancy \
 && strip /build/gpu-tenancy \
 && /build/gpu-tenancy version

FROM debian:bookworm-slim
# Runtime libraries of the binary only (the shared objects of the -dev packages above).
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates libcpp-httplib0.11 libssl3 libyaml-cpp0.7 libabsl20220623 libatomic1 \
      libjemalloc2 libgrpc++1.51 libgrpc29 libprotobuf32 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/gpu-tenancy /usr/local/bin/gpu-tenancy
# The same numeric user the Deployment runs as (runAsUser 65532); no home, no shell login.
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["/usr/local/bin/gpu-tenancy"]
CMD ["serve", "--help"]
