# Multi-stage: build with the Rust toolchain, run from a small non-root image.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p operator --bin operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/operator /operator
USER 65532:65532
ENTRYPOINT ["/operator"]
CMD ["run", "--leader-elect"]
