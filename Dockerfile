FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1
WORKDIR /app

# The CPU build of torch first (PyTorch's CPU wheel index), so sentence-transformers does not
# pull a multi-GB CUDA build.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir --index-url ${TORCH_INDEX_URL} torch==2.13.0

# The runtime only: the test and development tools stay out of the image.
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
RUN DATABASE_URL=postgresql://build@localhost/build REDIS_URL=redis://localhost:6379/0 WINNI_SECRET_KEY=build \
    WINNI_DATA_DIR=/tmp/build python manage.py collectstatic --noinput --settings=winni_site.settings.prod || true

EXPOSE 9020
CMD ["python", "-m", "uvicorn", "winni_site.asgi:application", "--host", "0.0.0.0", "--port", "9020", "--workers", "2"]
