# Production image: the same code runs the web server, the Celery worker and beat.
FROM python:3.11-slim

# One OpenBLAS thread per process: every service runs several processes (gunicorn and
# Celery workers) or shares the cores with them, and the scorer's estimates are sparse
# sums that OpenBLAS's extra threads only spin beside (bench/bench_recompute.py, runs
# alternated: 1.94 / 2.18 s per label batch against 2.25 / 2.72 s with two threads, and
# 2.5 / 2.8 s of CPU against 3.2 / 3.8 s).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    OPENBLAS_NUM_THREADS=1

RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq5 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 kbpo

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
# Static files are collected at build time with the production storage (hashed names),
# and the estimators' loops compiled ahead of time (no numba or LLVM at run time; the C
# compiler numba links them with is removed in the same step).
RUN KBPO_ENV=production DEBUG=0 \
    SECRET_KEY=build-time-only-key-not-used-at-runtime-0123456789abcdefghijklmnop \
    python manage.py collectstatic --noinput \
    && apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && python -m estimation.core.build_kernels \
    && apt-get purge -y --auto-remove gcc libc6-dev && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /app/var/media && chown -R kbpo:kbpo /app/var

USER kbpo
EXPOSE 8000
CMD ["gunicorn", "kbpo.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120", "--access-logfile", "-"]
