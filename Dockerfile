# gpushare's image: `gpushare watch` in a cluster (the chart's watch.image), or any command in a container.
#   docker build -t <registry>/gpushare:<version> .
# The wheel is built (the placement engine compiled by mypyc) in the first stage; the second holds only it.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
# a non-root user, as the chart's securityContext runs it (65532)
USER 65532:65532
ENTRYPOINT ["gpushare"]
CMD ["watch", "--listen=0.0.0.0:9445"]
