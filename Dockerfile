# Bannerfall server image: one node. Configuration comes from BANNERFALL_* variables (docs/operations.md).
FROM python:3.11-slim
WORKDIR /srv/bannerfall
COPY pyproject.toml setup.py mypyc.ini README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
# gcc compiles the hot paths with mypyc (setup.py; docs/decisions.md, "Compiled hot paths"); without it
# the install still succeeds, in pure Python (~20-30 % more CPU per action). Removed once built.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install --no-cache-dir -e . \
    && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* build .mypy_cache
ENV BANNERFALL_HOST=0.0.0.0 BANNERFALL_PORT=8000
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"
CMD ["bannerfall", "serve"]
