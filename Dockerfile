# The official slim Python image by default; `make image` passes a base built from Debian's
# packages (image/debian-base.sh) where that image cannot be pulled. Same steps either way.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
WORKDIR /src
# Dependencies first, in their own layer: code changes do not reinstall them.
COPY pyproject.toml README.md ./
RUN mkdir scheduler && touch scheduler/__init__.py \
 && /opt/venv/bin/pip install . && /opt/venv/bin/pip uninstall -y secondary-scheduler
COPY scheduler ./scheduler
RUN /opt/venv/bin/pip install --no-deps . && /opt/venv/bin/python -m compileall -q /opt/venv

FROM ${BASE_IMAGE}
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /opt/venv /opt/venv
# Numeric non-root user so runAsNonRoot can verify it; nothing is written at run time,
# so the root filesystem can be read-only.
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["/opt/venv/bin/secondary-scheduler"]
CMD ["--config", "/etc/secondary-scheduler/config.yaml"]
