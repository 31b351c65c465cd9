"""CDK entry point: ``npx cdk synth`` / ``npx cdk deploy`` run this (see docs/deploy.md)."""

from haki_infra.stack import build_app

if __name__ == "__main__":
    app, _ = build_app()
    app.synth()
