"""Helpers every app uses: the API's errors and parsers, strict input, CSP, tokens, error pages."""
