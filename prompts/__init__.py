"""Prompt templates, installed as ``reflect.prompts``."""
