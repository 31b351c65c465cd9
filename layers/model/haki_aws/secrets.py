"""Secrets the stack hands to the functions by reference, read from Secrets Manager once, at
cold start.

A deployed function's environment names the log salt's secret (``HAKI_LOG_SALT_SECRET_ARN``),
never its value: environment variables are readable by anyone allowed
``lambda:GetFunctionConfiguration``, while the secret is readable only by the functions' roles
(``secretsmanager:GetSecretValue`` on that one secret). The value completes the process's
:class:`haki.settings.Settings` as ``log_salt``, like a ``HAKI_LOG_SALT`` given locally.
"""

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from haki.errors import ConfigurationError
from haki.settings import Settings


def with_log_salt(settings: Settings) -> Settings:
    """``settings`` with ``log_salt`` read from the secret ``log_salt_secret_arn`` names;
    unchanged when no secret is named or a salt is given. A secret that cannot be read fails
    the cold start with a :class:`ConfigurationError` naming the setting (never the value)."""
    if settings.log_salt_secret_arn is None or settings.log_salt is not None:
        return settings
    import boto3  # in the Lambda runtime; imported only when a secret is named

    try:
        answer = boto3.client("secretsmanager").get_secret_value(
            SecretId=settings.log_salt_secret_arn)
        return Settings.model_validate(
            {**settings.model_dump(), "log_salt": answer["SecretString"]})
    except (BotoCoreError, ClientError, KeyError) as exc:
        raise ConfigurationError(
            f"HAKI_LOG_SALT_SECRET_ARN: the secret could not be read ({type(exc).__name__})"
        ) from exc
    except ValidationError:
        raise ConfigurationError(
            "HAKI_LOG_SALT_SECRET_ARN: the secret is not a valid log salt (16 characters or "
            "more)") from None  # the validation error would quote the value
