# The MLflow tracking server of deploy/compose/compose.yaml. The official
# MLflow image has no PostgreSQL driver, so this one installs the MLflow that
# deploy/install-deps.sh pins, with psycopg 3 (its binary wheel carries
# libpq): SQLAlchemy 2.x maps postgresql+psycopg:// to it. SQLAlchemy and
# Alembic are pinned to the versions the tests ran MLflow with; the other
# dependencies are whatever pip resolves for these pins.
FROM python:3.11-slim-bookworm

ARG MLFLOW_VERSION=3.17.2
ARG PSYCOPG_VERSION=3.3.9
ARG SQLALCHEMY_VERSION=2.1.9
ARG ALEMBIC_VERSION=1.20.1

RUN pip install --no-cache-dir --disable-pip-version-check \
        "mlflow==${MLFLOW_VERSION}" "psycopg[binary]==${PSYCOPG_VERSION}" \
        "sqlalchemy==${SQLALCHEMY_VERSION}" "alembic==${ALEMBIC_VERSION}" \
    && groupadd --system --gid 10002 mlflow \
    && useradd --system --uid 10002 --gid 10002 --home-dir /var/lib/mlflow \
        --create-home --shell /usr/sbin/nologin mlflow \
    && mkdir -p /mlartifacts && chown mlflow:mlflow /mlartifacts

# /mlartifacts exists and belongs to mlflow, so a new named volume mounted
# there takes that ownership.
USER 10002:10002
WORKDIR /var/lib/mlflow
EXPOSE 5000
CMD ["mlflow", "server", "--host=0.0.0.0", "--port=5000", \
     "--serve-artifacts", "--artifacts-destination=/mlartifacts"]
