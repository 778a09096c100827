# The operator's image: one static binary in an otherwise empty image, run as a non-root user.
#
# `make docker-build` compiles the binary first (statically, for musl: it needs nothing from the image,
# not even a libc) and this file only copies it in. So the build needs no base image and no registry,
# and the image holds nothing a scanner could flag but the binary itself.
FROM scratch
COPY target/x86_64-unknown-linux-musl/image/operator /operator
# The distroless `nonroot` user; the manifests also ask for runAsNonRoot and a read-only root.
USER 65532:65532
ENTRYPOINT ["/operator"]
CMD ["run", "--leader-elect"]
