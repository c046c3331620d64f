"""Docket's own number and date formats per language (settings.FORMAT_MODULE_PATH); Django's fill in the rest."""
