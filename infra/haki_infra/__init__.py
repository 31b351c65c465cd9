"""The AWS CDK app of Haki: one construct per concern, wired by ``stack.HakiStack``."""
