# The Airflow image with Athanor installed: `docker compose build` (docker-compose.yaml uses it).
FROM apache/airflow:3.3.2-python3.11

# Dependencies first, so editing the code does not reinstall them. The lock pins the whole
# resolved set (Airflow's constraint files are not reachable from every network).
COPY --chown=airflow:root requirements.txt requirements.lock /opt/athanor/
RUN pip install --no-cache-dir -r /opt/athanor/requirements.txt -c /opt/athanor/requirements.lock

# The package (include/) and its SQL (sql/): settings.py finds sql/ two folders above itself,
# so both live under one project root. Editable, so the compose mounts of include/ and sql/
# take effect without a rebuild.
COPY --chown=airflow:root pyproject.toml /opt/athanor/
COPY --chown=airflow:root include /opt/athanor/include
COPY --chown=airflow:root sql /opt/athanor/sql
RUN pip install --no-cache-dir --no-deps -e /opt/athanor

ENV ATHANOR_HOME=/opt/athanor
